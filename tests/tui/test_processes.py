"""``process.stop`` against real background ``terminal`` processes over real stdio
(docs/reference/tui-gateway.md#environment-and-processes)."""

from __future__ import annotations

import os
import re

from tests.timing import eventually_sync
from tests.tui.client import TuiProcess

BACKGROUND = '[[tool terminal {"command": "sleep 60", "background": true}]]'


def _start_background(tui: TuiProcess, sid: str) -> int:
    """Run a turn that starts ``sleep 60`` in the background; return its pid."""
    done = tui.turn(sid, BACKGROUND)
    assert done["status"] == "complete"
    found = re.search(r"pid (\d+)", done["text"])
    assert found, done["text"]
    pid = int(found.group(1))
    assert _running(pid)
    return pid


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _gone(pid: int, timeout: float = 5.0) -> bool:
    return eventually_sync(lambda: not _running(pid), timeout=timeout, interval=0.05, what=f"{pid} to end")


def test_process_stop_one_session(tui: TuiProcess) -> None:
    """A running background process of the named session is killed; others are untouched."""
    a, b = tui.create(), tui.create()
    pid_a = _start_background(tui, a)
    pid_b = _start_background(tui, b)
    assert tui.call("process.stop", session_id="20990101_000000_abcdef") == {"killed": 0}
    assert _running(pid_a) and _running(pid_b)
    assert tui.call("process.stop", session_id=a, timeout=15) == {"killed": 1}
    assert _gone(pid_a)
    assert _running(pid_b)
    assert tui.call("process.stop", session_id=a) == {"killed": 0}
    assert tui.call("process.stop", session_id=b, timeout=15) == {"killed": 1}
    assert _gone(pid_b)


def test_process_stop_all_leaves_running_turn(tui: TuiProcess) -> None:
    """Without session_id every session's processes stop, while a foreground tool turn runs on."""
    a, b, c = tui.create(), tui.create(), tui.create()
    pids = [_start_background(tui, a), _start_background(tui, b)]
    before = len(tui.events(c, "message.complete"))
    tui.call("prompt.submit", session_id=c, text='[[tool terminal {"command": "sleep 1; echo fg-done"}]]')
    tui.wait_event(c, "tool.start")
    assert tui.call("process.stop", timeout=15) == {"killed": 2}
    assert all(_gone(pid) for pid in pids)
    done = tui.wait_complete(c, before + 1)
    assert done["status"] == "complete"
    result = tui.wait_event(c, "tool.complete")["payload"]["result"]
    assert "fg-done" in result
    assert tui.call("process.stop") == {"killed": 0}
