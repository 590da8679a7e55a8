"""Replay a session's events from the kernel's event log
(docs/reference/tui-gateway.md#sequence-numbers-and-replay).

With the log on, a TUI frame's ``seq`` is the log number of the newest core event it carries, so
a host's cursor points into the log and a replay continues across a gateway restart: the log's
events after the cursor are projected again into frames, exactly as the live stream projects
them, and every ``LogGap`` becomes a ``session.gap`` frame (never a silent jump).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import EventLogStopped, LogGap
from hermes_tui_gateway.stream import SessionStream

if TYPE_CHECKING:
    from hermes_core import AnyEvent
    from hermes_tui_gateway.gateway import Live

PAGE = 5000


def gap_frame(session_id: str, gap: LogGap, upto: int) -> dict[str, Any]:
    """Return the ``session.gap`` frame for numbers of the log a replay cannot give."""
    last = min(gap.last_seq, upto)
    return {
        "type": "session.gap",
        "session_id": session_id,
        "seq": last,
        "payload": {"first_seq": gap.first_seq, "last_seq": last, "reason": gap.reason},
    }


async def from_log(live: Live, after: int, upto: int) -> tuple[list[dict[str, Any]], list[LogGap], int]:
    """Return the frames numbered ``after < seq <= upto``, the gaps among them, and the number
    the replay reached: ``upto``, or the log's stored end when the log stopped below it.

    :raises CursorError: ``after`` lies beyond the log's head.
    """
    session = live.session
    stream = live.stream
    projector = SessionStream(session, stream.info_extra, 1, 1, subscribe=False)
    projector.verbose = stream.verbose
    frames: list[dict[str, Any]] = []
    gaps: list[LogGap] = []
    pending: list[AnyEvent] = []
    cursor = after
    done = False
    # A read gives only stored events: the frames up to ``upto`` may have been let out by a
    # stream started while the log had yet to store them (the terminal event a restart appends).
    if upto > after:
        try:
            await session.kernel.events.durable(session.id, upto)
        except EventLogStopped as stopped:
            upto = max(after, stopped.stored)  # the rest was never stored, nor shown as numbered
    # The first read always happens: it is what checks the cursor against the log's head.
    page = await session.kernel.events.read(session.id, after=cursor, limit=PAGE)
    while True:
        for item in page.items:
            if isinstance(item, LogGap):
                if item.first_seq > upto:
                    done = True
                    break
                frames.extend(projector.project(pending))
                pending = []
                gaps.append(item)
                frames.append(gap_frame(session.id, item, upto))
                continue
            if item.seq > upto:
                done = True
                break
            pending.append(item)
        if done or not page.items or not page.more or page.last_seq >= upto:
            break
        cursor = page.last_seq
        page = await session.kernel.events.read(session.id, after=cursor, limit=PAGE)
    frames.extend(projector.project(pending))
    return frames, gaps, upto
