"""Steer, approval and stop applied to a run, here or on the instance that owns it
(docs/reference/api-server.md#run-bus)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_api_server.bus import RemoteRun, owner_error
from hermes_api_server.errors import ApiError
from hermes_api_server.run_state import PRIVATE_KEYS, TERMINAL
from hermes_api_server.runs_lookup import bus_unavailable
from hermes_api_server.trace_context import caller_trace
from hermes_core import valid_traceparent

if TYPE_CHECKING:
    from hermes_api_server.run_state import Run
    from hermes_api_server.state import ServerState
    from hermes_core import Span

#: How long a handler waits for the owning instance to answer a command.
CONTROL_TIMEOUT_S = 2.0


def open_command_span(
    state: ServerState,
    operation: str,
    command: str,
    run_id: str,
    parent: str | None,
    links: tuple[str, ...] = (),
) -> Span | None:
    """Open the span of a run command crossing the bus: ``send run.{command}`` (producer) on the
    instance that forwards it, ``process run.{command}`` (consumer) on the run's owner, linked to
    the span that created the run (``links``); None when tracing is off."""
    tracer = state.kernel.tracer
    if tracer is None:
        return None
    attributes = {
        "messaging.system": state.runs.bus.name,
        "messaging.operation.name": operation,
        "messaging.destination.name": f"run.{command}",
        "hermes.run.id": run_id,
        "hermes.bus.instance": state.runs.bus.instance_id,
    }
    kind = "producer" if operation == "send" else "consumer"
    return tracer.operation(
        f"{operation} run.{command}", parent=parent, kind=kind, attributes=attributes, links=links
    )


def require_reachable(state: ServerState, found: Any, run_id: str) -> None:
    """Refuse to act on a run another instance serves when the bus cannot say which one.

    On shared storage a stored status that is not terminal belongs to a run some instance is
    still serving; if the bus is down (or restarted empty and has not been told again yet),
    answering from the stored copy would lie (a "stop" that stops nothing). 503, try again.
    """
    if isinstance(found, dict) and state.store.shared and found.get("status") not in TERMINAL:
        raise ApiError(
            503,
            "run_owner_unavailable",
            f"The instance serving run {run_id} cannot be reached through the run bus right now; try again",
            headers={"Retry-After": "1"},
        )


async def apply_steer(state: ServerState, run: Run, text: str) -> dict[str, Any]:
    """Queue steer text for a running run of this process; ``run.steered`` is shown once the
    record that places it is written, before the turn can deliver the text."""
    async with run.showing:
        if run.status != "running" or run.session is None:
            raise ApiError(
                409, "run_not_accepting_steer", f"Run is not currently accepting steer input: {run.run_id}"
            )
        try:
            result = run.session.steer(text)
        except Exception:
            raise ApiError(500, "steer_failed", "Steering the run failed") from None
        if result != "accepted":
            raise ApiError(409, "steer_not_accepted", f"The run's turn already settled: {run.run_id}")
        await state.runs.add_recorded(run, "steered")
    return {"object": "hermes.run.steer", "run_id": run.run_id, "accepted": True}


def apply_approval(
    state: ServerState, run: Run, request_id: str | None, resolve_all: bool, choice: str
) -> dict[str, Any]:
    """Answer pending approval(s) of a run of this process."""
    pending = list(run.approvals.values())
    if request_id is not None:
        pending = [q for q in pending if q.request_id == request_id]
    if choice != "deny":
        for q in pending[:1] if not resolve_all else pending:
            if choice not in (q.choices or ("once", "deny")):
                raise ApiError(
                    400, "invalid_approval_choice", f"choice {choice!r} is not offered", param="choice"
                )
    if run.terminal:
        raise ApiError(409, "approval_not_active", f"Run is not active: {run.run_id}")
    if not pending:
        raise ApiError(409, "approval_not_pending", "No pending approval matches", param="request_id")
    targets = pending if resolve_all else pending[:1]
    resolved = 0
    for q in targets:
        if state.kernel.answer(q.request_id, choice) == "ok":
            resolved += 1
    if not resolved:
        raise ApiError(409, "approval_not_pending", "No pending approval matches", param="request_id")
    return {
        "object": "hermes.run.approval_response",
        "run_id": run.run_id,
        "choice": choice,
        "request_id": targets[0].request_id,
        "resolved": resolved,
    }


async def on_control(
    state: ServerState, command: str, run_id: str, args: dict[str, Any], traceparent: str | None = None
) -> dict[str, Any]:
    """Apply a command another instance forwarded for one of this process's runs; with a tracer,
    as a ``process run.{command}`` span under the sender's ``traceparent``
    (docs/observability.md#across-instances)."""
    parent = valid_traceparent(traceparent)
    run = state.runs.runs.get(run_id)
    created = run.traceparent if run is not None else None
    # Linked to the run's trace when the command comes from another (or none).
    links = (created,) if created and (parent is None or parent[3:35] != created[3:35]) else ()
    span = open_command_span(state, "process", command, run_id, parent, links)
    failure: str | None = "interrupted"  # what the span says if applying never returns
    try:
        answer = await _apply(state, command, run_id, args)
        failure = answer.get("code") if "error" in answer else None
        return answer
    finally:
        if span is not None:
            span.end(error=failure)


async def _apply(state: ServerState, command: str, run_id: str, args: dict[str, Any]) -> dict[str, Any]:
    run = state.runs.runs.get(run_id)
    try:
        if run is None:
            raise ApiError(404, "run_not_found", f"Run not found: {run_id}", param="run_id")
        if command == "stop":
            body = await state.runs.stop(run)
        elif command == "steer":
            body = await apply_steer(state, run, str(args.get("text", "")))
        elif command == "approval":
            body = apply_approval(
                state, run, args.get("request_id"), bool(args.get("all")), str(args.get("choice"))
            )
        else:
            raise ApiError(400, "invalid_request", f"Unknown run command: {command}")
    except ApiError as err:
        return {"error": "api_error", "status": err.status, "code": err.code, "message": err.message}
    return {"body": body}


async def forward(
    state: ServerState, remote: RemoteRun, command: str, args: dict[str, Any]
) -> dict[str, Any]:
    """Send a command to the run's owner and return its answer body.

    :raises ApiError: the owner's own error, 409 ``run_owner_lost`` when the owner is gone (the
        run is ended with ``owner_lost``), 503 ``run_owner_unavailable`` when it did not answer.
    """
    status = remote.status
    if status.get("status") in ("completed", "failed", "cancelled", "interrupted"):
        if command == "stop":
            return {k: v for k, v in status.items() if k not in PRIVATE_KEYS}
        code = "run_not_accepting_steer" if command == "steer" else "approval_not_active"
        raise ApiError(409, code, f"Run is not active: {remote.run_id}")
    bus = state.runs.bus
    caller = valid_traceparent(caller_trace())
    span = open_command_span(state, "send", command, remote.run_id, caller)
    trace = (span.traceparent() if span is not None else None) or caller
    failure: str | None = "interrupted"  # what the span says if the answer never comes
    try:
        answer = await bus.send(
            remote.owner, command, remote.run_id, args, CONTROL_TIMEOUT_S, traceparent=trace
        )
        if answer.get("error") == "owner_lost" and not await bus.reap(remote.run_id):
            # No heartbeat, but the bus cannot tell yet that the owner is gone (it restarted,
            # or the owner stalls within its grace period): nothing ended; try again.
            answer = {"error": "owner_timeout"}
        error = owner_error(answer, remote.run_id)
        failure = error.code if error is not None else None
    except Exception as exc:
        failure = "bus_unavailable"
        raise bus_unavailable(exc) from None
    finally:
        if span is not None:
            span.end(error=failure)
    if error is not None:
        raise error
    body: dict[str, Any] = answer.get("body") or {}
    return body
