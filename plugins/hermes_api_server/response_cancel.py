"""``POST /v1/responses/{id}/cancel``: stop a response whose turn is still running
(docs/reference/api-server.md#cancelling-a-response).

Every response is cancellable while it runs, background or not: a streamed one (its id arrives
in ``response.created``) or a non-streamed one another client learned the id of. A background
response another instance runs (shared records) is cancelled by asking its owner through its
lease (:mod:`hermes_api_server.response_lease`).
A response that already ended is refused the way OpenAI refuses it (400, ``Cannot cancel a
completed response.``), except one that is already ``cancelled``: cancelling again returns it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from hermes_api_server.errors import ApiError, json_response
from hermes_api_server.state import get_state, principal
from hermes_api_server.turns import abandon

if TYPE_CHECKING:
    from hermes_api_server.response_builder import ResponseBuilder
    from hermes_api_server.state import ServerState
    from hermes_core import Session, Turn

#: How long a cancel waits for the turn to stop and the final object to be written.
SETTLE_S = 30.0


@dataclass(eq=False, slots=True)
class LiveResponse:
    """A response whose turn runs in this process, as the cancel route needs it."""

    principal: str
    builder: ResponseBuilder
    session: Session | None = None
    turn: Turn | None = None
    cancel_requested: bool = False
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    #: A background response's stream events so far (``response_background.Frames``).
    frames: Any = None

    def attach(self, session: Session, turn: Turn) -> None:
        """The turn was submitted: a cancel can interrupt it now."""
        self.session, self.turn = session, turn

    async def cancel(self) -> dict[str, Any]:
        """Interrupt the turn, wait until the job wrote its final object, and return it."""
        self.cancel_requested = True
        if self.session is not None and self.turn is not None:
            await abandon(self.session, self.turn)
        try:
            await asyncio.wait_for(asyncio.shield(self.finished.wait()), SETTLE_S)
        except TimeoutError:
            pass  # the job still settles on its own; answer with what it has now
        return self.builder.snapshot()


async def cancel_response(request: web.Request) -> web.Response:
    """Handle ``POST /v1/responses/{response_id}/cancel``."""
    state = get_state(request)
    who = principal(request)
    response_id = request.match_info["response_id"]
    live = state.live_responses.get(response_id)
    if live is not None and live.principal == who and not live.finished.is_set():
        return json_response(await live.cancel())
    record = await state.store.get_response(who, response_id)
    if record is None:
        raise ApiError(404, "response_not_found", f"Response not found: {response_id}", param="response_id")
    from hermes_api_server.response_background import LOG_KEY, public, settle_if_gone

    # Background, stored as running by a process that ended or an instance whose lease went
    # stale: settle it (from the event log) first; one whose owner lives is asked to cancel.
    obj: dict[str, Any] = await settle_if_gone(state, who, record)
    background = LOG_KEY in obj
    if background and obj.get("status") in ("in_progress", "queued"):
        obj = await _cancel_elsewhere(state, who, record, obj)
    status = obj.get("status")
    if status == "cancelled":
        return json_response(public(obj))
    if status not in ("in_progress", "queued"):
        raise ApiError(400, "response_not_cancellable", f"Cannot cancel a {status} response.")
    if state.store.shared or background:
        # Another instance runs it (its lease is alive), or on shared records a
        # non-background response ran there.
        raise ApiError(
            409,
            "response_not_cancellable",
            "The response runs on another instance of this server; only that instance can cancel it",
        )
    # Stored as in progress by this process before a restart: nothing runs it any more.
    obj = {**obj, "status": "cancelled"}
    await state.store.put_response(
        response_id,
        who,
        record["session_id"],
        record["through_row_id"],
        record["instructions"],
        obj,
        None,
        record.get("input"),
    )
    return json_response(public(obj))


async def _cancel_elsewhere(
    state: ServerState, who: str, record: dict[str, Any], obj: dict[str, Any]
) -> dict[str, Any]:
    """Ask the instance running a background response to cancel it and wait (at most
    :data:`SETTLE_S`) until it ended; return the object as it stands then."""
    from hermes_api_server.response_background import LOG_KEY, settle_if_gone
    from hermes_api_server.response_lease import request_cancel

    if LOG_KEY not in obj or not await request_cancel(state, obj["id"]):
        return obj
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_S
    while obj.get("status") in ("in_progress", "queued") and loop.time() < deadline:
        await asyncio.sleep(min(0.1, state.kernel.settings.bus.heartbeat_s))
        fresh = await state.store.get_response(who, obj["id"])
        if fresh is None:
            break
        obj = await settle_if_gone(state, who, fresh)  # its owner may be gone meanwhile
    return obj
