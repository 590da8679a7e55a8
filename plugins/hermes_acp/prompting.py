"""``session/prompt``, ``session/cancel`` and ``$/cancel_request``
(docs/reference/acp.md#prompt-turns, #slash-commands, #cancellation).

Prompts of one session run one at a time in arrival order: each waits until the previous
prompt's response is on the wire, so every update of a turn follows the previous response.
Cancelling flags every registered prompt (done synchronously by the connection's ``prepare``)
and interrupts the running core turn with its queue discarded.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from hermes_acp import params as P
from hermes_acp.content import first_text, prompt_text
from hermes_acp.errors import AUTH_MESSAGE, AUTH_REQUIRED, NO_MODEL, auth_required
from hermes_acp.turnstream import TurnStream
from hermes_core import traceparent_from_meta
from hermes_core.rpc import INTERNAL_ERROR, RpcError, current_request

if TYPE_CHECKING:
    from hermes_acp.conn import AcpConnection
    from hermes_acp.state import AcpSession, Ticket
    from hermes_acp.wire_meta import HermesPromptFields, HermesPromptMeta
    from hermes_core import Part, TurnOutcome

log = logging.getLogger("hermes_acp")
ANSWERABLE = frozenset({"approval"})
NOT_HERE = frozenset({"stop", "steer", "queue", "new"})
CANCELLED = {"stopReason": "cancelled"}
END_TURN = {"stopReason": "end_turn"}


async def interrupt_session(conn: AcpConnection, acp_session: AcpSession) -> None:
    """Cancel every registered prompt and interrupt the running turn.

    :param conn: the connection.
    :param acp_session: the session.
    """
    acp_session.cancel_tickets()
    await acp_session.core.interrupt(reason="user", discard_queue=True)


async def cancel(conn: AcpConnection, params: dict[str, Any]) -> None:
    """Handle ``session/cancel``; idle or unknown sessions are ignored.

    :param conn: the connection.
    :param params: ``{sessionId}``.
    """
    session_id = params.get("sessionId")
    acp_session = conn.sessions.get(session_id) if isinstance(session_id, str) else None
    if acp_session is None or acp_session.closed:
        return
    await interrupt_session(conn, acp_session)


async def cancel_request(conn: AcpConnection, params: dict[str, Any]) -> None:
    """Handle ``$/cancel_request``: an in-flight prompt is cancelled like ``session/cancel``.

    :param conn: the connection.
    :param params: ``{requestId}``.
    """
    from hermes_acp.conn import _id_key

    for acp_session, _ticket in list(conn.prompts.get(_id_key(params.get("requestId")), [])):
        if not acp_session.closed:
            await acp_session.core.interrupt(reason="user", discard_queue=True)


def _release(conn: AcpConnection, acp_session: AcpSession, ticket: Ticket) -> None:
    """After the response: release the next prompt once this one's predecessor is done too."""
    conn.forget_prompt(ticket.request_id, ticket)
    previous = ticket.previous
    if previous is None or previous.responded.done():
        acp_session.finish_ticket(ticket)
    else:
        previous.responded.add_done_callback(lambda _f: acp_session.finish_ticket(ticket))
    ticket.previous = None


async def prompt(conn: AcpConnection, params: dict[str, Any]) -> dict[str, Any]:
    """Run one prompt turn (or slash command) and answer its stop reason.

    :param conn: the connection.
    :param params: ``{sessionId, prompt}``.
    :returns: ``{stopReason}``.
    """
    request = current_request()
    state = request.state if request is not None else {}
    ticket: Ticket | None = state.get("ticket")
    owner: AcpSession | None = state.get("acp_session")
    if ticket is not None and owner is not None and request is not None:
        # Release first, whatever happens below, so a close waiting on this prompt never hangs.
        registered = ticket
        request.after_response(lambda: _release(conn, owner, registered))
    args = P.parse(P.PromptParams, params)
    acp_session = conn.session(args.sessionId)
    if ticket is None or owner is not acp_session:
        ticket = acp_session.new_ticket(request.id if request is not None else None)
        fresh = ticket
        if request is not None:
            request.after_response(lambda: _release(conn, acp_session, fresh))
        else:
            _release(conn, acp_session, fresh)
    text = await prompt_text(conn, acp_session, args.prompt)
    if ticket.previous is not None:
        await asyncio.shield(ticket.previous.responded)
    gate = acp_session.gate
    if gate is not None and not gate.done():
        await asyncio.shield(gate)
    if ticket.cancelled or acp_session.closed:
        return CANCELLED
    head = first_text(args.prompt)
    if head.startswith("/"):
        # Commands run whatever the model's state: /model is how a session gets out of a
        # provider that lost its key.
        handled = await _slash(conn, acp_session, head)
        if isinstance(handled, (str, list)):
            # The command asked for this text to run as the turn (/retry).
            _require_model(conn, acp_session)
            return await _run_turn(conn, acp_session, ticket, handled, _caller_trace(params))
        if handled is not None:
            return handled
    _require_model(conn, acp_session)
    return await _run_turn(conn, acp_session, ticket, text, _caller_trace(params))


def _caller_trace(params: Any) -> str | None:
    """The client's W3C ``traceparent`` from ``_meta`` (docs/observability.md#propagation)."""
    return traceparent_from_meta(params.get("_meta") if isinstance(params, dict) else None)


def _require_model(conn: AcpConnection, acp_session: AcpSession) -> None:
    """Refuse a model turn (``-32000``) while the session has no model or its key is missing."""
    status = conn.kernel.model_status(acp_session.core)
    if status.model is None:
        raise auth_required(NO_MODEL)
    if status.problem is not None:
        raise auth_required(status.problem)


async def _run_turn(
    conn: AcpConnection,
    acp_session: AcpSession,
    ticket: Ticket,
    text: str | list[Part],
    traceparent: str | None = None,
) -> dict[str, Any]:
    core = acp_session.core
    turn = await core.submit(text, owner="acp", answerable=ANSWERABLE, traceparent=traceparent)
    ticket.submitted = True
    stream = TurnStream(conn, acp_session)
    outcome: TurnOutcome | None = None
    try:
        # One batch per wake-up: deltas already queued behind each other leave as one chunk.
        while batch := await turn.next_events():
            stream.feed(batch)
        outcome = await turn.outcome
    finally:
        stream.finish(outcome)
    return _response(conn, acp_session, ticket, outcome)


def _response(
    conn: AcpConnection, acp_session: AcpSession, ticket: Ticket, outcome: TurnOutcome | None
) -> dict[str, Any]:
    if ticket.cancelled or outcome is None:
        return CANCELLED
    reason = outcome.reason
    if reason == "stop":
        return END_TURN
    if reason.startswith("interrupted"):
        return CANCELLED
    if reason == "iteration_cap":
        _chunk(conn, acp_session, "Stopped: the turn reached its limit of tool rounds.")
        return {"stopReason": "max_turn_requests"}
    if reason == "length":
        return {"stopReason": "max_tokens"}
    if reason == "budget_exceeded":
        return _budget_stop(conn, acp_session, outcome.message, outcome.retry_after)
    if reason == "refusal":
        return {"stopReason": "refusal"}
    if reason == "provider_error" and outcome.error_kind == "auth":
        raise RpcError(
            AUTH_REQUIRED, AUTH_MESSAGE, {"detail": outcome.message or "the provider refused the key"}
        )
    kind = outcome.error_kind if reason == "provider_error" and outcome.error_kind else reason
    data: dict[str, Any] = {"kind": kind}
    if outcome.retry_after is not None:
        data["retryAfter"] = outcome.retry_after
    message = outcome.message or f"the turn failed ({kind})"
    raise RpcError(INTERNAL_ERROR, message, data)


def _budget_stop(
    conn: AcpConnection, acp_session: AcpSession, message: str | None, retry_after: float | None
) -> dict[str, Any]:
    """ACP's ``stopReason`` enum is closed: ``max_tokens`` is the nearest; ``_meta.hermes`` says
    ``budget_exceeded`` (docs/protocols/acp.md#budgets) and the user sees why in the chat. A turn
    the budget stopped and a command whose model call it refused (``/compress``) answer alike."""
    message = message or "the budget is exhausted"
    _chunk(conn, acp_session, f"Stopped: {message}.")
    fields: HermesPromptFields = {"stopReason": "budget_exceeded", "message": message}
    if retry_after is not None:
        fields["retryAfter"] = retry_after
    meta: HermesPromptMeta = {"hermes": fields}
    return {"stopReason": "max_tokens", "_meta": meta}


def _chunk(conn: AcpConnection, acp_session: AcpSession, text: str) -> None:
    conn.update(
        acp_session.id,
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text},
            "messageId": "cmd-" + uuid.uuid4().hex[:12],
        },
    )


async def _slash(
    conn: AcpConnection, acp_session: AcpSession, text: str
) -> dict[str, Any] | str | list[Part] | None:
    """Run a known slash command through the core.

    :returns: the prompt response; a text to run as the turn (a ``send`` result); or ``None``,
        which lets the original text reach the model.
    """
    from hermes_acp.config_methods import config_update
    from hermes_core import BudgetExceeded, CommandNotAvailable, HermesError

    word = text[1:].split(None, 1)[0] if len(text) > 1 else ""
    kernel = conn.kernel
    if word in NOT_HERE and kernel.registry.command(word) is None:
        _chunk(conn, acp_session, f"/{word} is not available here: prompts queue over ACP; cancel instead.")
        return END_TURN
    spec = kernel.registry.command(word) if word else None
    if spec is None:
        return None
    core = acp_session.core
    before = (core.profile, core.info().model)
    try:
        result = await kernel.dispatch_slash(core, text, surface="acp")
    except CommandNotAvailable:
        _chunk(conn, acp_session, f"/{spec.name} is not available here.")
        return END_TURN
    except BudgetExceeded as exc:  # the command's model call (e.g. /compress) was not made
        return _budget_stop(conn, acp_session, str(exc), exc.retry_after)
    except HermesError as exc:
        _chunk(conn, acp_session, str(exc))
        return END_TURN
    except Exception as exc:
        log.error("/%s failed", spec.name, exc_info=exc)
        _chunk(conn, acp_session, f"/{spec.name} failed.")
        return END_TURN
    if result is None:
        return None
    output = result.output or (result.message if result.kind != "send" else None)
    if output:
        _chunk(conn, acp_session, output)
    if result.kind == "send" and (result.message or (result.data or {}).get("parts")):
        if (core.profile, core.info().model) != before:
            conn.update(acp_session.id, await config_update(conn, core))
        # /retry of a prompt with images hands back its stored parts, images included.
        parts = (result.data or {}).get("parts")
        return list(parts) if parts else (result.message or "")
    if (core.profile, core.info().model) != before:
        conn.update(acp_session.id, await config_update(conn, core))
    return END_TURN
