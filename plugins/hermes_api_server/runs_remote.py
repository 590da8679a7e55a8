"""Stream the events of a run another instance owns, from the shared bus
(docs/reference/api-server.md#run-bus)."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from aiohttp import web

from hermes_api_server.bus import RemoteRun, from_bus
from hermes_api_server.errors import ApiError, dumps
from hermes_api_server.journal import MAX_SUBSCRIBERS, event_frame, gap_frame
from hermes_api_server.runs_lookup import bus_unavailable
from hermes_api_server.sse import ClientGone, SseWriter
from hermes_api_server.state import ServerState

log = logging.getLogger("hermes.api.runs")
POLL_S = 1.0
KEEPALIVE_S = 10.0


async def stream_remote(
    request: web.Request, state: ServerState, remote: RemoteRun, cursor: int
) -> web.StreamResponse:
    """Replay events after ``cursor`` and follow the run until its terminal event.

    Whatever the stream no longer (or never) held between the cursor and the next event it
    sends — trimmed, lost with a Redis restart, expired after the run settled — is announced
    with a ``stream.gap`` event first; a stream that holds nothing more answers with the stored
    terminal event.
    """
    bus = state.runs.bus
    run_id = remote.run_id
    terminal = remote.status.get("terminal_event")
    if terminal is not None and cursor == int(terminal["seq"]):
        return web.Response(status=204)
    readers = state.runs.remote_subscribers
    if readers.get(run_id, 0) >= MAX_SUBSCRIBERS:
        raise ApiError(
            429, "rate_limit_exceeded", "Too many subscribers for this run", headers={"Retry-After": "1"}
        )
    readers[run_id] = readers.get(run_id, 0) + 1
    writer = SseWriter(request, {"X-Hermes-Session-Id": remote.session_id})
    try:
        await writer.open()
        if terminal is not None and cursor > int(terminal["seq"]):
            # A cursor past the end of a settled run: say how it ended, as the owner does.
            await writer.raw(event_frame(int(terminal["seq"]), dumps(terminal)) + ": stream closed\n\n")
            return writer.response
        logged = _Logged(state, remote.status)
        bounds = await bus.bounds(run_id)
        if bounds is None and terminal is not None:
            await writer.raw(await _ending(logged, run_id, cursor, terminal))
            return writer.response
        quiet_since = time.monotonic()
        ended = False
        while True:
            entries = await bus.read(run_id, cursor, POLL_S)
            if entries:
                out = []
                for seq, data, _ in entries:
                    if seq > cursor + 1:
                        # Events the stream does not hold (trimmed, or they never reached it):
                        # from the session's event log where it has them, else a stream.gap.
                        out.append(await logged.between(run_id, cursor + 1, seq - 1))
                    out.append(event_frame(seq, data))
                    cursor = seq
                await writer.raw("".join(out))
                quiet_since = time.monotonic()
                if any(done for _, _, done in entries):
                    await writer.raw(": stream closed\n\n")
                    return writer.response
                continue
            if ended:
                # Settled, and nothing after the cursor: it is at or past the terminal event.
                await writer.raw(": stream closed\n\n")
                return writer.response
            record = await bus.lookup(run_id)
            final = from_bus(record["status"]).get("terminal_event") if record is not None else None
            if final is None:
                # A settled run the bus no longer knows (Redis lost it): its stored end.
                final = (await state.runs.lookup.stored_end(run_id)) if record is None else None
            if final is not None:
                if int(final["seq"]) <= cursor:
                    ended = True  # a cursor at or past the end: nothing more comes
                    continue
                more = await bus.read(run_id, cursor, 0.001)
                if not more:
                    # The stream lacks the end (and what came before it): the stored end.
                    await writer.raw(await _ending(logged, run_id, cursor, final))
                    return writer.response
                continue
            # An owner that is gone: the run ends (owner_lost) once the bus can tell for sure.
            await bus.reap(run_id)
            if time.monotonic() - quiet_since >= KEEPALIVE_S:
                await writer.raw(": keepalive\n\n")
                quiet_since = time.monotonic()
    except ClientGone:
        return writer.response
    except Exception as exc:
        # The bus went away mid-stream: end it; the client reconnects with Last-Event-ID.
        log.warning("run bus read failed for %s: %s", run_id, exc)
        if not writer.response.prepared:
            raise bus_unavailable(exc) from None
        with contextlib.suppress(Exception):
            await writer.raw(": bus unavailable, reconnect with Last-Event-ID\n\n")
        return writer.response
    finally:
        readers[run_id] -= 1
        if not readers[run_id]:
            del readers[run_id]


class _Logged:
    """The run's events as its session's event log gives them (read once, when needed), to fill
    what the bus's stream lacks (docs/reference/api-server.md#resume-after-a-restart)."""

    def __init__(self, state: ServerState, status: dict[str, Any]) -> None:
        self.state, self.status = state, status
        self.events: dict[int, dict[str, Any]] | None = None

    async def between(self, run_id: str, first: int, last: int) -> str:
        """Return the frames of seqs ``first``..``last``: logged events, a ``stream.gap`` for
        each range the log does not have."""
        if last - first >= 100_000:
            return gap_frame(run_id, first, last)
        if self.events is None:
            from hermes_api_server.run_log import replay

            found = await replay(self.state.kernel, self.state.settings.show_reasoning, self.status)
            self.events = {int(p["seq"]): p for p in found.payloads}
        out = ""
        missing: int | None = None
        for seq in range(first, last + 1):
            payload = self.events.get(seq)
            if payload is None:
                missing = seq if missing is None else missing
                continue
            if missing is not None:
                out += gap_frame(run_id, missing, seq - 1)
                missing = None
            out += event_frame(seq, dumps(payload))
        if missing is not None:
            out += gap_frame(run_id, missing, last)
        return out


async def _ending(logged: _Logged, run_id: str, cursor: int, terminal: dict[str, Any]) -> str:
    """Return the frames that end a stream at the stored ``terminal`` event: the seqs between the
    cursor and it (from the event log, else a ``stream.gap``), the event, ``: stream closed``."""
    seq = int(terminal["seq"])
    out = ""
    if seq > cursor + 1:
        out += await logged.between(run_id, cursor + 1, seq - 1)
    if seq > cursor:
        out += event_frame(seq, dumps(terminal))
    return out + ": stream closed\n\n"
