"""HTTP handlers of ``/v1/runs`` (docs/reference/api-server.md#runs)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from hermes_api_server.bus import RemoteRun
from hermes_api_server.convert import response_items, seed_history
from hermes_api_server.errors import ApiError, invalid, json_response
from hermes_api_server.http_util import (
    check_metadata,
    check_session_id,
    fingerprint,
    header_session_id,
    header_session_key,
    idempotency_key,
    read_json,
    session_headers,
)
from hermes_api_server.idempotency import key_conflict
from hermes_api_server.journal import MAX_SUBSCRIBERS
from hermes_api_server.model_select import choose_model
from hermes_api_server.pool import check_workspace
from hermes_api_server.response_target import Target, chained_target, mint_session_id
from hermes_api_server.run_state import PRIVATE_KEYS, Run
from hermes_api_server.runs_control import apply_approval, apply_steer, forward, require_reachable
from hermes_api_server.sse import ClientGone, SseWriter
from hermes_api_server.state import get_state, principal
from hermes_api_server.turns import image_warning

CHOICE_ALIASES = {"approve": "once", "approved": "once", "allow": "once"}
CHOICES = frozenset({"once", "session", "always", "deny"})
KEEPALIVE_S = 10.0


def _accepted(
    run: Run, replayed: bool, channel: str | None, extra: dict[str, str] | None = None
) -> web.Response:
    headers = session_headers(run.session_id, channel, run.resolved_model)
    headers.update(extra or {})
    headers["Location"] = f"/v1/runs/{run.run_id}"
    if replayed:
        headers["Idempotency-Replayed"] = "true"
    body: dict[str, Any] = {
        "run_id": run.run_id,
        "status": run.status if replayed else "started",
        "replayed": replayed,
        "session_id": run.session_id,
    }
    return json_response(body, status=202, headers=headers)


def _accepted_stored(status: dict[str, Any], channel: str | None) -> web.Response:
    headers = session_headers(status["session_id"], channel, status.get("resolved_model"))
    headers["Location"] = f"/v1/runs/{status['run_id']}"
    headers["Idempotency-Replayed"] = "true"
    body = {
        "run_id": status["run_id"],
        "status": status["status"],
        "replayed": True,
        "session_id": status["session_id"],
    }
    return json_response(body, status=202, headers=headers)


async def create_run(request: web.Request) -> web.Response:
    """Handle ``POST /v1/runs``."""
    state = get_state(request)
    who = principal(request)
    body = await read_json(request)
    key = idempotency_key(request)
    channel = header_session_key(request)
    raw_input = body.get("input")
    conv = response_items(raw_input)
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise invalid("instructions must be a string", "instructions")
    metadata = check_metadata(body.get("metadata"))
    header_id = header_session_id(request)
    body_id = body.get("session_id")
    if body_id is not None and body_id != "":
        check_session_id(body_id, "session_id")
    else:
        body_id = None
    if header_id and body_id and header_id != body_id:
        raise ApiError(
            400, "conflicting_parameters", "session_id differs from X-Hermes-Session-Id", param="session_id"
        )
    session_id = header_id or body_id
    previous = body.get("previous_response_id")
    if previous is not None and (not isinstance(previous, str) or not previous):
        raise invalid("previous_response_id must be a string", "previous_response_id")
    history_given = body.get("conversation_history") is not None
    seed = seed_history(body.get("conversation_history"), "conversation_history")
    if sum([session_id is not None, previous is not None, history_given]) > 1:
        raise ApiError(400, "conflicting_parameters", "Send at most one history source", param="session_id")
    multi = isinstance(raw_input, list) and len(raw_input) > 1
    if multi and (session_id is not None or previous is not None or history_given):
        raise ApiError(400, "conflicting_parameters", "A multi-item input must come alone", param="input")
    cwd = body.get("cwd")
    workspace = None
    if cwd is not None:
        if not isinstance(cwd, str):
            raise ApiError(400, "invalid_workspace", "cwd must be a string", param="cwd")
        workspace = check_workspace(cwd, state.workspace_roots(), "cwd")
    elif request.headers.get("X-Hermes-Workspace"):
        workspace = check_workspace(
            request.headers["X-Hermes-Workspace"], state.workspace_roots(), "X-Hermes-Workspace"
        )
    choice = await choose_model(state.kernel, state.settings, body, always_resolve=True)
    claim_key = None if key is None else (who, key)
    async with state.runs.in_flight.serial(claim_key):
        if key is not None:
            fp = fingerprint({"body": body, "session_key": channel})
            replay = await _replay(state, who, key, fp, channel)
            if replay is not None:
                return replay
        if previous is not None:
            target = await chained_target(state, who, previous)
        elif session_id is not None:
            target = Target(session_id)
        else:
            found = (
                await state.kernel.sessions.latest_for_channel(channel)
                if channel and not history_given
                else None
            )
            target = Target(found or mint_session_id())
        if not await state.pool.exists(target.session_id):
            target.seed = [*seed, *conv.history]
        with state.runs.in_flight.claim(claim_key) as created:
            # Open the session before the 202, so a lease another process holds is a 409
            # (docs/reference/api-server.md#error-codes), not a run that fails later; the run's task joins the
            # open session (the pool counts its users).
            async with state.pool.use(
                target.session_id, owner=who, channel_key=channel, workspace=workspace, seed=target.seed
            ):
                state.admit()
                run = await state.runs.create(
                    who, target, conv, choice, metadata, channel, workspace, instructions
                )
                if key is not None:
                    await state.store.put_run_key(who, key, fp, run.run_id)
                created(run.run_id)
                await asyncio.sleep(0)  # the run's task takes its own reference before ours goes
    warning = await image_warning(state.kernel, choice.resolved or run.resolved_model or "", conv.parts)
    return _accepted(run, False, channel, warning)


async def _replay(state: Any, who: str, key: str, fp: str, channel: str | None) -> web.Response | None:
    run_id = await state.runs.in_flight.wait((who, key))
    if run_id is not None:
        run = state.runs.runs.get(run_id)
        if run is not None:
            return _accepted(run, True, channel)
    record = await state.store.run_key(who, key)
    if record is None:
        return None
    if record[0] != fp:
        raise key_conflict()
    found = await state.runs.find(who, record[1])
    if isinstance(found, Run):
        return _accepted(found, True, channel)
    if isinstance(found, RemoteRun):
        return _accepted_stored(found.status, channel)
    return _accepted_stored(found, channel)


async def get_run(request: web.Request) -> web.Response:
    """Return a run's status."""
    state = get_state(request)
    found = await state.runs.find(principal(request), request.match_info["run_id"])
    if isinstance(found, Run):
        status = found.status_object()
    else:
        stored = found.status if isinstance(found, RemoteRun) else found
        status = {k: v for k, v in stored.items() if k not in PRIVATE_KEYS}
    headers = session_headers(status["session_id"], None, status.get("resolved_model"))
    return json_response(status, headers=headers)


RUN_LIST_MAX = 100


async def list_runs(request: web.Request) -> web.Response:
    """List the key's newest runs (``?limit=``, 1-100, default 20), newest first."""
    raw = request.query.get("limit", "20").strip()
    if not raw.isdigit() or not 1 <= int(raw) <= RUN_LIST_MAX:
        raise invalid(f"limit must be an integer from 1 to {RUN_LIST_MAX}", "limit")
    state = get_state(request)
    runs = await state.runs.recent(principal(request), int(raw))
    return json_response({"object": "list", "data": runs})


def _cursor(request: web.Request) -> int:
    raw = request.headers.get("Last-Event-ID")
    if raw is None:
        raw = request.query.get("after")
    if raw is None or raw == "":
        return 0
    value = raw.strip()
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        # Event seqs are small positive integers; 18 digits keeps every cursor within what a
        # shared stream's entry ids can hold (an integer below 2**63).
        raise ApiError(
            400,
            "invalid_last_event_id",
            "The event cursor must be a non-negative integer of at most 18 digits",
            param="Last-Event-ID",
        )
    return int(value)


async def run_events(request: web.Request) -> web.StreamResponse:
    """Stream a run's events with replay from its journal (docs/reference/api-server.md#run-events)."""
    state = get_state(request)
    run_id = request.match_info["run_id"]
    found = await state.runs.find(principal(request), run_id)
    cursor = _cursor(request)
    require_reachable(state, found, run_id)
    if isinstance(found, RemoteRun):
        from hermes_api_server.runs_remote import stream_remote

        return await stream_remote(request, state, found, cursor)
    if not isinstance(found, Run):
        terminal = found.get("terminal_event")
        if terminal is None:
            raise ApiError(404, "run_not_found", f"Run not found: {run_id}", param="run_id")
        from hermes_api_server.run_log import replay, replayed_journal

        # The owner restarted or died: the run's events come back from its session's event log
        # (docs/reference/api-server.md#resume-after-a-restart); whatever the log cannot give
        # (trimmed, logging off) is a stream.gap before the stored end, never a silent jump.
        found_log = await replay(state.kernel, state.settings.show_reasoning, found)
        journal = replayed_journal(run_id, found_log, terminal)
        session_id = found["session_id"]
    else:
        journal = found.journal
        session_id = found.session_id
    if journal.terminal is not None and cursor == journal.terminal[0]:
        return web.Response(status=204)
    if journal.subscribers >= MAX_SUBSCRIBERS:
        raise ApiError(
            429, "rate_limit_exceeded", "Too many subscribers for this run", headers={"Retry-After": "1"}
        )
    journal.subscribers += 1
    writer = SseWriter(request, {"X-Hermes-Session-Id": session_id})
    try:
        await writer.open()
        if journal.terminal is not None and cursor > journal.terminal[0]:
            await writer.raw(journal.terminal[1] + ": stream closed\n\n")
            return writer.response
        while True:
            frames, cursor = journal.after(cursor)
            if frames:
                await writer.raw("".join(frames))
            if journal.terminal is not None and cursor >= journal.terminal[0]:
                await writer.raw(": stream closed\n\n")
                return writer.response
            before = journal.changes
            await journal.wait(KEEPALIVE_S)
            if journal.changes == before:
                await writer.raw(": keepalive\n\n")
    except ClientGone:
        return writer.response
    finally:
        journal.subscribers -= 1


def _steer_text(body: dict[str, Any]) -> str:
    value = body.get("input")
    if value is None:
        value = body.get("message")
    if value is None:
        value = body.get("text")
    bad = ApiError(
        400,
        "invalid_steer_input",
        "Steer text must be non-empty text of at most 65,536 characters",
        param="input",
    )
    if isinstance(value, list):
        pieces = []
        for part in value:
            if isinstance(part, str):
                pieces.append(part)
            elif (
                isinstance(part, dict)
                and part.get("type") in ("text", "input_text")
                and isinstance(part.get("text"), str)
            ):
                pieces.append(part["text"])
            else:
                raise bad
        value = "\n".join(pieces)
    if not isinstance(value, str):
        raise bad
    text = value.strip()
    if not text or len(text) > 65536:
        raise bad
    return text


async def steer_run(request: web.Request) -> web.Response:
    """Queue steer text for a running run."""
    state = get_state(request)
    run_id = request.match_info["run_id"]
    found = await state.runs.find(principal(request), run_id)
    require_reachable(state, found, run_id)
    if isinstance(found, RemoteRun):
        text = _steer_text(await read_json(request))
        return json_response(await forward(state, found, "steer", {"text": text}))
    if not isinstance(found, Run) or found.status != "running" or found.session is None:
        raise ApiError(
            409, "run_not_accepting_steer", f"Run is not currently accepting steer input: {run_id}"
        )
    body = await read_json(request)
    text = _steer_text(body)
    return json_response(await apply_steer(state, found, text))


async def run_approval(request: web.Request) -> web.Response:
    """Answer a run's pending approval(s) (docs/reference/api-server.md#answer-a-runs-approval)."""
    state = get_state(request)
    run_id = request.match_info["run_id"]
    found = await state.runs.find(principal(request), run_id)
    body = await read_json(request)
    request_id = body.get("request_id")
    if request_id is not None and (
        not isinstance(request_id, str) or not request_id or len(request_id) > 256
    ):
        raise ApiError(
            400, "invalid_approval_request", "request_id must be a non-empty string", param="request_id"
        )
    resolve_all = body.get("all", body.get("resolve_all", False))
    if not isinstance(resolve_all, bool):
        raise ApiError(400, "invalid_approval_request", "all must be a boolean", param="all")
    raw_choice = body.get("choice")
    choice = raw_choice.strip().lower() if isinstance(raw_choice, str) else None
    choice = CHOICE_ALIASES.get(choice or "", choice)
    if choice not in CHOICES:
        raise ApiError(
            400, "invalid_approval_choice", "choice must be once, session, always or deny", param="choice"
        )
    assert choice is not None
    require_reachable(state, found, run_id)
    if isinstance(found, RemoteRun):
        args = {"request_id": request_id, "all": resolve_all, "choice": choice}
        return json_response(await forward(state, found, "approval", args))
    if not isinstance(found, Run):
        raise ApiError(409, "approval_not_active", f"Run is not active: {run_id}")
    return json_response(apply_approval(state, found, request_id, resolve_all, choice))


async def stop_run(request: web.Request) -> web.Response:
    """Stop a run (docs/reference/api-server.md#stop-a-run)."""
    state = get_state(request)
    run_id = request.match_info["run_id"]
    found = await state.runs.find(principal(request), run_id)
    require_reachable(state, found, run_id)
    if isinstance(found, RemoteRun):
        return json_response(await forward(state, found, "stop", {}))
    if not isinstance(found, Run):
        return json_response({k: v for k, v in found.items() if k not in PRIVATE_KEYS})
    return json_response(await state.runs.stop(found))
