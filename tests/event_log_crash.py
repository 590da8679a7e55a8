"""The kill -9 scenario of the event log, shared by the SQLite and PostgreSQL tests: a process is
killed in the middle of a streaming turn, having shown each event only once it was stored; the
next process that opens the session finds every event shown, no gap, and the cut-off turn's
terminal ``TurnCompleted`` (interrupted) numbered right after the last stored event
(docs/reference/core.md#after-a-crash)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from hermes_core import Kernel, LogGap, TextDelta, TurnCompleted, TurnStarted

CHILD = Path(__file__).with_name("event_log_child.py")
ROOT = Path(__file__).resolve().parents[1]


def run_child_until_killed(
    backend: str, target: str, session_id: str, workspace: Path
) -> tuple[dict[int, str], int]:
    """Run the child until 60 events are stored and a few more handed out; kill it with SIGKILL.

    :returns: ``{seq: event type}`` the child printed, and the last seq it saw stored.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["PYTHONPATH"] = str(ROOT)
    child = subprocess.Popen(
        [sys.executable, str(CHILD), backend, target, session_id, str(workspace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    printed: dict[int, str] = {}
    durable = 0
    after_durable = 0
    try:
        assert child.stdout is not None
        for line in child.stdout:
            kind, seq, *rest = line.split()
            if kind == "event":
                printed[int(seq)] = rest[0]
                if durable >= 60:
                    after_durable += 1
            elif kind == "durable":
                durable = int(seq)
            if durable >= 60 and after_durable >= 5:
                break
        else:
            raise AssertionError(f"the child ended early: {child.stderr.read() if child.stderr else ''}")
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    return printed, durable


async def check_restart(kernel: Kernel, session_id: str, printed: dict[int, str], durable: int) -> None:
    """Open the session in ``kernel`` and check what the log says after the kill."""
    session = await kernel.open_session(session_id, source="cli", owner="parent")
    await kernel.events.flush()
    items: list[Any] = []
    after = 0
    while True:
        page = await kernel.events.read(session_id, after=after)
        items += page.items
        after = page.last_seq
        if not page.more:
            break
    events = [i for i in items if not isinstance(i, LogGap)]
    gaps = [i for i in items if isinstance(i, LogGap)]
    by_seq = {e.seq: e for e in events}
    newest = max(printed)
    # Everything stored before the kill is there, as the child saw it.
    for seq in range(1, durable + 1):
        assert seq in by_seq and type(by_seq[seq]).__name__ == printed.get(seq, type(by_seq[seq]).__name__), (
            seq
        )
    # Everything shown is stored, as it was shown; nothing is missing.
    for seq, kind in printed.items():
        assert seq in by_seq and type(by_seq[seq]).__name__ == kind, (seq, kind)
    assert gaps == [], gaps
    # The cut-off turn ends, once, right after the last stored event.
    started = [e for e in events if isinstance(e, TurnStarted)]
    ended = [e for e in events if isinstance(e, TurnCompleted)]
    assert len(started) == 1 and len(ended) == 1 and ended[0].turn_id == started[0].turn_id
    terminal = ended[0]
    assert terminal.seq == max(e.seq for e in events if e is not terminal) + 1 > newest
    assert terminal.outcome.status == "interrupted"
    assert terminal.outcome.reason == "interrupted_by_system" and terminal.outcome.partial
    said = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert terminal.text == said and said.startswith("t0 t1 t2")
    # The transcript agrees: the text streamed before the crash is the turn's reply row, cut off.
    reply = session.rows[-1]
    assert reply.role == "assistant" and reply.content == said and reply.id == terminal.assistant_row_id
    assert (reply.meta or {}).get("cut_off") == "interrupted"
    # A client holding the newest number it saw continues without a gap, up to the end.
    resumed = await kernel.events.read(session_id, after=newest)
    assert not any(isinstance(i, LogGap) for i in resumed.items), resumed.items
    assert resumed.items[0].seq == newest + 1 and isinstance(resumed.items[-1], TurnCompleted)
    # The session goes on.
    turn = await session.submit("after the crash", owner="parent")
    again = [e async for e in turn.events()]
    assert again[0].seq > terminal.seq and isinstance(again[-1], TurnCompleted)
    assert again[-1].outcome.status == "complete"
    await session.close()
