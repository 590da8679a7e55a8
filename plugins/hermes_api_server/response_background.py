"""Responses background mode (docs/reference/api-server.md#background-responses).

``background: true`` answers at once; the turn runs in a task of this process. Its stream events
are kept in memory while it runs (``GET /v1/responses/{id}?stream=true&starting_after=N`` reads
them and follows), and they are a pure function of the turn's events in the session's event log:
the builder is fed one core event at a time and names its items from the response id, and an
event is shown only once the core events behind it are stored. So after the process ended (a
restart, a ``kill -9``) the same events, with the same ``sequence_number``, are rebuilt from the
log, and a response the end of its process cut off is settled ``failed`` (``error.code``
``interrupted``) with the output the log holds, once its owner's lease is taken over
(:mod:`hermes_api_server.response_lease`; without a reader too,
:mod:`hermes_api_server.response_sweep`). On shared records another instance streams a response
running elsewhere from the log too, and settles it (``owner_lost``) the same way.

What the stored object keeps for that (``hermes_log``, never shown): the session's log head when
the prompt was submitted, the prompt's queue item, and the object's fixed fields.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from hermes_api_server.errors import ApiError, dumps, invalid
from hermes_api_server.response_builder import ResponseBuilder
from hermes_api_server.response_events import ResponseLifecycleEvent, StreamEvent, terminal_kind
from hermes_api_server.run_log import PAGE, REPLAY_MAX
from hermes_api_server.sse import ClientGone, SseWriter
from hermes_core import LogGap, TurnCompleted, TurnStarted

if TYPE_CHECKING:
    from hermes_api_server.state import ServerState
    from hermes_core import AnyEvent

log = logging.getLogger("hermes.api.responses")
#: The private key of a stored background response object (stripped from every answer).
LOG_KEY = "hermes_log"
CUT_OFF = (
    "The server stopped (it was killed, crashed or restarted) before this response completed; "
    "the output it had produced is kept."
)
OWNER_LOST = (
    "The instance that ran this response stopped answering (it was killed, crashed or lost) "
    "before the response completed; the output it had produced is kept."
)
KEEPALIVE_S = 10.0
#: Cursors are sequence numbers: at most 18 digits (as run event cursors).
CURSOR_DIGITS = 18


@dataclass(eq=False, slots=True)
class Frames:
    """The stream events of a background response running here, and a wake-up for readers."""

    events: list[StreamEvent] = field(default_factory=list)
    ended: bool = False
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, events: list[StreamEvent], *, end: bool = False) -> None:
        self.events.extend(events)
        self.ended = self.ended or end
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    async def wait(self, timeout: float) -> bool:
        """Wait for more; return whether anything changed."""
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            return False
        return True


def public(obj: dict[str, Any]) -> dict[str, Any]:
    """The response object without what only the server keeps."""
    return {k: v for k, v in obj.items() if k != LOG_KEY}


def parse_starting_after(raw: str | None) -> int:
    """Return the ``starting_after`` cursor (-1 when absent: from the first event)."""
    if raw is None or raw == "":
        return -1
    value = raw.strip()
    if not (value.isascii() and value.isdigit()) or len(value) > CURSOR_DIGITS:
        raise invalid(
            f"starting_after must be a non-negative integer of at most {CURSOR_DIGITS} digits "
            "(the sequence_number of the last event received)",
            "starting_after",
        )
    return int(value)


def terminal_of(obj: dict[str, Any], seq: int) -> ResponseLifecycleEvent:
    """The terminal stream event of a settled object (as ``ResponseBuilder.terminal_event``)."""
    return ResponseLifecycleEvent(
        type=terminal_kind(obj.get("status")), sequence_number=seq, response=public(obj)
    )


def builder_for(state: ServerState, obj: dict[str, Any]) -> ResponseBuilder:
    """A builder that produces the stream of the stored background response ``obj``."""
    entry = obj[LOG_KEY]
    builder = ResponseBuilder(
        dict(entry["base"]), show_reasoning=state.settings.show_reasoning, redact=state.kernel.redactor
    )
    builder.id = obj["id"]
    builder.created_at = obj["created_at"]
    builder.hermes = dict(obj.get("hermes") or {})
    builder.stable_ids = True
    return builder


async def rebuild(
    state: ServerState, record: dict[str, Any]
) -> tuple[ResponseBuilder, list[StreamEvent], bool]:
    """Feed the response's turn, read back from the session's event log, to a fresh builder.

    :returns: the builder, the stream events up to (not including) the terminal one, and
        whether the log held the whole turn (no trimmed or unreadable events).
    """
    obj = record["object"]
    entry = obj[LOG_KEY]
    builder = builder_for(state, obj)
    events = builder.start()
    turn_id: str | None = None
    cursor = int(entry.get("after") or 0)
    #: A settled cut-off response keeps how many events it had then (its owner may have logged
    #: more after it was taken for lost: they are not part of its stream).
    cap = entry.get("events")
    read = 0
    whole = True
    try:
        while read < REPLAY_MAX:
            page = await state.kernel.events.read(record["session_id"], after=cursor, limit=PAGE)
            for item in page.items:
                if isinstance(item, LogGap):
                    whole = whole and item.reason == "lost"
                    continue
                event: AnyEvent = item
                if turn_id is None:
                    if isinstance(event, TurnStarted) and entry.get("item_id") in event.item_ids:
                        turn_id = event.turn_id
                    continue
                if event.turn_id != turn_id:
                    continue
                # The turn's end closes its open items (their ``.done`` events), as it did live.
                events.extend(builder.feed_batch([event]))
                if isinstance(event, TurnCompleted):
                    return builder, events[:cap] if isinstance(cap, int) else events, whole
                if isinstance(cap, int) and len(events) >= cap:
                    return builder, events[:cap], whole
            read += len(page.items)
            if not page.more:
                break
            cursor = page.last_seq
    except Exception:
        log.warning("reading response %s back from the event log failed", obj.get("id"), exc_info=True)
        whole = False
    return builder, events, whole and turn_id is not None


async def cut_off_object(
    state: ServerState, record: dict[str, Any], message: str, code: str
) -> dict[str, Any]:
    """Return the ``failed`` object of a background response whose process ended before it did,
    with the output the event log holds."""
    builder, events, _whole = await rebuild(state, record)
    builder.cut_off(message, code)
    return {**builder.snapshot(), LOG_KEY: {**record["object"][LOG_KEY], "events": len(events)}}


async def store_object(
    state: ServerState, who: str, record: dict[str, Any], obj: dict[str, Any]
) -> dict[str, Any]:
    """Write ``obj`` as the response's stored object; return it."""
    await state.store.put_response(
        obj["id"],
        who,
        record["session_id"],
        record["through_row_id"],
        record["instructions"],
        obj,
        None,
        record.get("input"),
    )
    record["object"] = obj
    return obj


def running(state: ServerState, obj: dict[str, Any]) -> bool:
    """A background response stored as running that does not run in this process."""
    return (
        LOG_KEY in obj
        and obj.get("status") in ("queued", "in_progress")
        and obj["id"] not in state.live_responses
    )


async def settle_if_gone(state: ServerState, who: str, record: dict[str, Any]) -> dict[str, Any]:
    """Return the response's object, settled first when nothing runs it any more.

    A background response stored as running that does not run here is settled only once its
    owner's lease is taken over (:mod:`hermes_api_server.response_lease`: the owner is a dead
    process of this host, or was silent for ``bus.owner_grace_s``), by the one instance that
    takes it: ``failed`` with ``interrupted`` on records of one host (the server stopped), with
    ``owner_lost`` on shared records (the instance that ran it stopped answering).
    """
    obj: dict[str, Any] = record["object"]
    if not running(state, obj):
        return obj
    from hermes_api_server.response_lease import settled, take_over

    token, final = await take_over(state, obj["id"], who)
    if final is not None:
        return await store_object(state, who, record, final)  # committed, maybe not copied yet
    if token is None:
        return obj  # its owner is alive
    message, code = (OWNER_LOST, "owner_lost") if state.store.shared else (CUT_OFF, "interrupted")
    ended = await cut_off_object(state, record, message, code)
    if not await settled(state, obj["id"], token, ended):
        fresh = await state.store.get_response(who, obj["id"])
        return fresh["object"] if fresh is not None else obj
    return await store_object(state, who, record, ended)


async def stream_stored(
    request: web.Request, state: ServerState, who: str, response_id: str
) -> web.StreamResponse:
    """Handle ``GET /v1/responses/{id}?stream=true[&starting_after=N]``."""
    after = parse_starting_after(request.query.get("starting_after"))
    live = state.live_responses.get(response_id)
    frames = live.frames if live is not None and live.principal == who else None
    if frames is not None:
        return await follow(request, frames, after, {})
    record = await state.store.get_response(who, response_id)
    if record is None:
        raise ApiError(404, "response_not_found", f"Response not found: {response_id}", param="response_id")
    obj = record["object"]
    if LOG_KEY not in obj:
        raise invalid(
            "This response cannot be streamed: it was not created with background set to true", "stream"
        )
    obj = await settle_if_gone(state, who, record)
    headers = {"X-Hermes-Session-Id": record["session_id"]}
    if obj.get("status") in ("queued", "in_progress"):
        # Another instance runs it (shared records): follow its turn in the event log until it
        # ends there or its owner is found gone (then it is settled from here).
        frames = Frames()
        feeder = asyncio.create_task(
            _from_log(state, who, response_id, frames), name=f"hermes-follow-{response_id}"
        )
        try:
            return await follow(request, frames, after, headers)
        finally:
            feeder.cancel()
    _builder, events, whole = await rebuild(state, record)
    if not whole:
        log.warning("response %s: the event log no longer holds all of its events", response_id)
    done = Frames()
    done.add([*events, terminal_of(obj, len(events))], end=True)
    return await follow(request, done, after, headers)


async def _from_log(state: ServerState, who: str, response_id: str, frames: Frames) -> None:
    """Feed ``frames`` with the stream of a background response another instance runs, read
    back from the event log every ``bus.heartbeat_s``, until it ended (settling it when its
    owner is gone)."""
    try:
        while True:
            record = await state.store.get_response(who, response_id)
            if record is None:
                frames.add([], end=True)
                return
            obj = await settle_if_gone(state, who, record)
            _builder, events, _whole = await rebuild(state, record)
            rest = events[len(frames.events) :]
            if obj.get("status") not in ("queued", "in_progress"):
                frames.add([*rest, terminal_of(obj, len(frames.events) + len(rest))], end=True)
                return
            if rest:
                frames.add(rest)
            await asyncio.sleep(state.kernel.settings.bus.heartbeat_s)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.warning("following response %s in the event log failed", response_id, exc_info=True)
        frames.add([], end=True)


async def follow(
    request: web.Request, frames: Frames, after: int, headers: dict[str, str]
) -> web.StreamResponse:
    """Send the events numbered above ``after``, then the later ones until the last.

    A cursor at or past the end of a response still running waits (before any header goes
    out) until the response reaches it or ends: the stored object can read finished a moment
    before the running response adds its terminal event, and a cursor past that end must get
    the 400 the finished response gives, not an empty stream."""
    while not frames.ended and after >= len(frames.events):
        await frames.wait(KEEPALIVE_S)
    if frames.ended and after >= len(frames.events):
        raise invalid(
            f"starting_after is past the last event of this response ({len(frames.events) - 1})",
            "starting_after",
        )
    writer = SseWriter(request, headers)
    cursor = after + 1
    try:
        await writer.open()
        while True:
            batch = frames.events[cursor:]
            if batch:
                cursor += len(batch)
                await writer.raw("".join(f"event: {e['type']}\ndata: {dumps(e)}\n\n" for e in batch))
            if frames.ended and cursor >= len(frames.events):
                return writer.response
            if not await frames.wait(KEEPALIVE_S):
                await writer.raw(": keepalive\n\n")
    except ClientGone:
        return writer.response
