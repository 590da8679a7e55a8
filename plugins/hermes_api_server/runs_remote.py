"""Stream the events of a run another instance owns, from the shared bus
(docs/reference/api-server.md#run-bus)."""

from __future__ import annotations

import contextlib
import logging
import time

from aiohttp import web

from hermes_api_server.bus import RemoteRun
from hermes_api_server.errors import ApiError, dumps
from hermes_api_server.journal import MAX_SUBSCRIBERS
from hermes_api_server.runs_lookup import bus_unavailable
from hermes_api_server.sse import ClientGone, SseWriter
from hermes_api_server.state import ServerState

log = logging.getLogger("hermes.api.runs")
POLL_S = 1.0
KEEPALIVE_S = 10.0


def _gap(run_id: str, first: int, last: int) -> dict[str, object]:
    return {
        "event": "stream.gap",
        "run_id": run_id,
        "timestamp": time.time(),
        "from_seq": first,
        "to_seq": last,
    }


def _frame(seq: int, data: str) -> str:
    return f"id: {seq}\ndata: {data}\n\n"


async def stream_remote(
    request: web.Request, state: ServerState, remote: RemoteRun, cursor: int
) -> web.StreamResponse:
    """Replay events after ``cursor`` and follow the run until its terminal event.

    A cursor older than what the stream still holds gets a ``stream.gap`` event first; a stream
    that expired after the run settled answers with the stored terminal event.
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
            await writer.raw(_frame(int(terminal["seq"]), dumps(terminal)) + ": stream closed\n\n")
            return writer.response
        bounds = await bus.bounds(run_id)
        if bounds is None and terminal is not None:
            if cursor < int(terminal["seq"]):
                await writer.raw(_frame(int(terminal["seq"]), dumps(terminal)))
            await writer.raw(": stream closed\n\n")
            return writer.response
        if bounds is not None and cursor + 1 < bounds[0]:
            await writer.raw("data: " + dumps(_gap(run_id, cursor + 1, bounds[0] - 1)) + "\n\n")
            cursor = bounds[0] - 1
        quiet_since = time.monotonic()
        settled = False
        while True:
            entries = await bus.read(run_id, cursor, POLL_S)
            if entries:
                out = []
                for seq, data, _ in entries:
                    if seq > cursor + 1:
                        # Events that never reached the stream: say so, never skip them silently.
                        out.append("data: " + dumps(_gap(run_id, cursor + 1, seq - 1)) + "\n\n")
                    out.append(_frame(seq, data))
                    cursor = seq
                await writer.raw("".join(out))
                quiet_since = time.monotonic()
                if any(done for _, _, done in entries):
                    await writer.raw(": stream closed\n\n")
                    return writer.response
                continue
            if settled:
                # Settled, and nothing after the cursor: it is at or past the terminal event.
                await writer.raw(": stream closed\n\n")
                return writer.response
            settled = await bus.reap(run_id)  # an owner that is gone: the run ends (owner_lost)
            if not settled:
                # A cursor at or past the terminal event of a run that settled meanwhile: done.
                record = await bus.lookup(run_id)
                final = record["status"].get("terminal_event") if record is not None else None
                settled = final is not None and int(final["seq"]) <= cursor
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
