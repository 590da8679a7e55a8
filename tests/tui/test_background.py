"""``prompt.background`` over real stdio (docs/reference/tui-gateway.md#prompting): ids, task-owned questions,
completion and failure."""

from __future__ import annotations

import re

from tests.tui.client import TuiProcess

TASK_ID = re.compile(r"^bg_[0-9a-f]{6}$")
ASK = '[[tool clarify {"question": "which branch?"}]]'


def test_background_id_format_and_failure(tui: TuiProcess) -> None:
    """Ids are ``bg_<6 hex>``, unique; a failing task completes with ``status:error``, text ``error:…``."""
    sid = tui.create()
    ok = tui.call("prompt.background", session_id=sid, text="side job")["task_id"]
    bad = tui.call("prompt.background", session_id=sid, text="[[error upstream exploded]]")["task_id"]
    assert TASK_ID.match(ok) and TASK_ID.match(bad) and ok != bad
    tui.wait_event(sid, "background.complete", count=2)
    done = {e["payload"]["task_id"]: e["payload"] for e in tui.events(sid, "background.complete")}
    assert done[ok]["status"] == "complete" and done[ok]["text"] == "You said: side job"
    assert done[bad]["status"] == "error" and done[bad]["text"].startswith("error:")
    assert tui.error("prompt.background", session_id=sid, text=" ").code == 4012
    assert tui.call("session.history", session_id=sid)["count"] == 0


def test_background_question_survives_interrupt(tui: TuiProcess) -> None:
    """A task's question carries task_id, outlives the parent's interrupt; its answer ends the task."""
    sid = tui.create()
    task = tui.call("prompt.background", session_id=sid, text=ASK)["task_id"]
    ask = tui.wait_event(sid, "clarify.request")["payload"]
    assert ask["task_id"] == task and ask["question"] == "which branch?"

    # The session's own turn is not blocked by the waiting task, and its interrupt spares the task.
    tui.call("prompt.submit", session_id=sid, text="[[tokens 100000]] [[delay 2]]")
    tui.wait_event(sid, "message.delta")
    result = tui.call("session.interrupt", session_id=sid)
    assert result["interrupted"] is True
    assert tui.wait_complete(sid)["status"] == "interrupted"
    tui.wait_idle(sid)
    assert tui.events(sid, "clarify.expire") == []
    status = tui.call("session.status", session_id=sid)
    assert ask["request_id"] in [r["request_id"] for r in status["open_requests"]]
    assert tui.turn(sid, "meanwhile")["text"] == "You said: meanwhile"

    assert tui.call("clarify.respond", request_id=ask["request_id"], answer="main") == {"status": "ok"}
    done = tui.wait_event(sid, "background.complete")["payload"]
    assert done["task_id"] == task and done["status"] == "complete"
    assert "main" in done["text"] and not done["text"].startswith("error:")


def test_background_stops_on_close_and_limit(tui: TuiProcess) -> None:
    """At most 4 tasks run (4009 background_limit); session.close ends them as ``interrupted``."""
    sid = tui.create()
    tasks = [tui.call("prompt.background", session_id=sid, text=ASK)["task_id"] for _ in range(4)]
    tui.wait_event(sid, "clarify.request", count=4)
    full = tui.error("prompt.background", session_id=sid, text="one more")
    assert full.code == 4009 and full.data == {"reason": "background_limit"}
    assert tui.call("session.close", session_id=sid) == {"closed": True}
    tui.wait_event(sid, "background.complete", count=4)
    ended = {e["payload"]["task_id"]: e["payload"]["status"] for e in tui.events(sid, "background.complete")}
    assert ended == dict.fromkeys(tasks, "interrupted")
    expired = tui.events(sid, "clarify.expire")
    assert len(expired) == 4 and {e["payload"]["reason"] for e in expired} == {"closed"}


def test_background_approval_carries_task_id(tui: TuiProcess) -> None:
    """A task's guarded command asks on the parent with task_id; a deny reaches the task's tool."""
    sid = tui.create()
    task = tui.call(
        "prompt.background", session_id=sid, text='[[tool terminal {"command": "hermes-guard-test"}]]'
    )["task_id"]
    ask = tui.wait_event(sid, "approval.request")["payload"]
    assert ask["task_id"] == task and ask["choices"][-1] == "deny"
    assert tui.call("approval.respond", session_id=sid, request_id=ask["request_id"], choice="deny") == {
        "resolved": 1
    }
    done = tui.wait_event(sid, "background.complete")["payload"]
    assert done["task_id"] == task and done["status"] == "complete"
    assert "declined" in done["text"]
