"""The turn stream, queue, steer and interrupt over real stdio (checks 9, 12, 13, 14, 31; Pi rows)."""

from __future__ import annotations

import json
import time

from tests.timing import scaled
from tests.tui.client import TuiProcess


def test_turn_stream_order_and_text(tui: TuiProcess) -> None:
    """Check 9: response first, then message.start → deltas → one complete → session.info idle."""
    sid = tui.create()
    start_index = len(tui.col.frames)
    request_id = tui.start("prompt.submit", session_id=sid, text="hello there [[tokens 40]]")
    assert tui.response(request_id)["result"] == {"status": "streaming"}
    done = tui.wait_complete(sid)
    tui.wait_idle(sid)
    frames = tui.col.frames[start_index:]
    response_at = next(i for i, f in enumerate(frames) if f.get("id") == request_id)
    start_at = next(i for i, f in enumerate(frames) if f.get("params", {}).get("type") == "message.start")
    assert response_at < start_at
    turn = [f["params"]["type"] for f in frames[start_at:] if f.get("method") == "event"]
    turn = [t for t in turn if t in ("message.start", "message.delta", "message.complete", "session.info")]
    complete_at = turn.index("message.complete")
    assert turn[0] == "message.start"
    assert turn.count("message.complete") == 1
    assert "message.delta" in turn[:complete_at]
    assert "message.delta" not in turn[complete_at:]
    assert done["status"] == "complete"
    deltas = "".join(e["payload"]["text"] for e in tui.events(sid, "message.delta"))
    assert deltas == done["text"]
    assert done["text"].startswith("t0 t1")
    last_info = tui.events(sid, "session.info")[-1]["payload"]
    assert last_info["running"] is False and last_info["status"] == "idle"
    assert done["usage"]["total"] >= done["turn_usage"]["total"] > 0


def test_busy_submit_is_queued_then_runs_after(tui: TuiProcess) -> None:
    """Check 12 / Pi follow_up: a busy submit is queued; a second start…complete runs it."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text="first [[tokens 200]] [[delay 5]]")
    queued = tui.call("prompt.submit", session_id=sid, text="second")
    assert queued == {"status": "queued", "position": 1}
    first = tui.wait_complete(sid, 1)
    second = tui.wait_complete(sid, 2)
    assert first["status"] == "complete"
    assert second["text"] == "You said: second"
    starts = tui.events(sid, "message.start")
    assert len(starts) == 2 and starts[1]["payload"].get("queued") is True
    tui.wait_idle(sid)


def test_steer_during_a_tool_turn(tui: TuiProcess) -> None:
    """Check 13 / Pi steer: queued during a tool round, delivered with status.update, in the reply."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text='go [[tool terminal {"command":"sleep 1"}]]')
    tui.wait_event(sid, "tool.start")
    assert tui.call("session.steer", session_id=sid, text="use tabs") == {
        "status": "queued",
        "text": "use tabs",
    }
    done = tui.wait_complete(sid)
    update = tui.wait_event(sid, "status.update", where=lambda e: e["payload"]["kind"] == "steer")
    assert update["payload"]["kind"] == "steer"
    assert done["text"].endswith(" / Steer: use tabs")
    tui.wait_idle(sid)
    idle = tui.call("session.steer", session_id=sid, text="late")
    assert idle == {"status": "rejected", "text": "late", "reason": "idle"}


def test_steer_after_the_last_tool_batch_comes_back_as_pending(tui: TuiProcess) -> None:
    """Check 13: a steer with no later tool boundary returns as message.complete.pending_steer."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text="plain text [[tokens 300]] [[delay 5]]")
    tui.wait_event(sid, "message.delta")
    assert tui.call("session.steer", session_id=sid, text="too late")["status"] == "queued"
    done = tui.wait_complete(sid)
    assert done["pending_steer"] == "too late"
    assert "Steer" not in done["text"]


def test_steer_param_errors(tui: TuiProcess) -> None:
    """Empty or oversized steer text → 4002, checked before the session lookup."""
    assert tui.error("session.steer", session_id="nope", text="").code == 4002
    assert tui.error("session.steer", session_id="nope", text=5).code == 4002
    sid = tui.create()
    assert tui.error("session.steer", session_id=sid, text="x" * 65537).code == 4002
    assert tui.error("session.steer", session_id="nope", text="hi").code == 4001


def test_interrupt_while_streaming(tui: TuiProcess) -> None:
    """Check 14 / Pi abort: interrupted within 1 s, queue discarded, next prompt succeeds."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text="[[tokens 100000]] [[delay 2]]")
    tui.call("prompt.submit", session_id=sid, text="queued one")
    tui.wait_event(sid, "message.delta")
    started = time.monotonic()
    result = tui.call("session.interrupt", session_id=sid)
    done = tui.wait_complete(sid, timeout=1.0)
    assert time.monotonic() - started < scaled(1.0)
    assert result["status"] == "interrupted" and result["interrupted"] is True
    assert result["discarded_queue"] == ["queued one"]
    assert done["status"] == "interrupted"
    tui.wait_idle(sid)
    assert len(tui.events(sid, "message.complete")) == 1
    assert tui.turn(sid, "again")["text"] == "You said: again"
    idle = tui.call("session.interrupt", session_id=sid)
    assert idle == {"status": "interrupted", "interrupted": False, "discarded_queue": []}


def test_interrupt_right_after_submit_sees_the_turn(tui: TuiProcess) -> None:
    """docs/reference/tui-gateway.md#concurrency-and-ordering: an interrupt read right after a submit always
    sees that turn."""
    sid = tui.create()
    tui.send(
        {
            "id": 1,
            "method": "prompt.submit",
            "params": {"session_id": sid, "text": "[[tokens 5000]] [[delay 1]]"},
        }
    )
    tui.send({"id": 2, "method": "session.interrupt", "params": {"session_id": sid}})
    assert tui.response(2)["result"]["interrupted"] is True
    assert tui.wait_complete(sid)["status"] == "interrupted"


def test_prompt_text_is_never_a_slash_command(tui: TuiProcess) -> None:
    """Check 31: prompt.submit {text:"/help"} runs a model turn."""
    sid = tui.create()
    assert tui.turn(sid, "/help")["text"] == "You said: /help"


def test_turn_outcomes_map_to_message_complete(tui: TuiProcess) -> None:
    """The outcome table: provider error, length, refusal; the session stays usable."""
    sid = tui.create()
    failed = tui.turn(sid, "[[error boom]]")
    assert failed["status"] == "error"
    assert failed["error"]["code"] == "upstream"
    truncated = tui.turn(sid, "cut [[finish length]]")
    assert truncated["status"] == "complete" and truncated["warning"] == "output_truncated"
    assert truncated["partial"] is True
    refused = tui.turn(sid, "no [[finish refusal]]")
    assert refused["warning"] == "refusal"
    assert tui.turn(sid, "fine")["status"] == "complete"


def test_prompt_errors(tui: TuiProcess) -> None:
    """Empty text → 4012, a non-string → -32602, an unknown session → 4001."""
    sid = tui.create()
    assert tui.error("prompt.submit", session_id=sid, text="  ").code == 4012
    assert tui.error("prompt.submit", session_id=sid, text=["x"]).code == -32602
    err = tui.error("prompt.submit", session_id="20200101_000000_abcdef", text="x")
    assert err.code == 4001 and err.data["resumable"] is False


def test_background_prompt(tui: TuiProcess) -> None:
    """prompt.background runs a one-shot with no shared history and reports background.complete."""
    sid = tui.create()
    task = tui.call("prompt.background", session_id=sid, text="side job")["task_id"]
    assert task.startswith("bg_")
    done = tui.wait_event(sid, "background.complete")
    assert done["payload"]["task_id"] == task and done["payload"]["status"] == "complete"
    assert "side job" in done["payload"]["text"]
    assert tui.call("session.history", session_id=sid)["count"] == 0


def test_busy_policy_interrupt_keeps_the_queue(tui: TuiProcess) -> None:
    """busy=interrupt: the running turn is interrupted and the queued text runs next."""
    sid = tui.create()
    tui.call("config.set", session_id=sid, key="busy", value="interrupt")
    tui.call("prompt.submit", session_id=sid, text="[[tokens 100000]] [[delay 2]]")
    tui.wait_event(sid, "message.delta")
    assert tui.call("prompt.submit", session_id=sid, text="instead")["status"] == "queued"
    assert tui.wait_complete(sid, 1)["status"] == "interrupted"
    assert tui.wait_complete(sid, 2)["text"] == "You said: instead"


def test_full_queue_is_refused(tui: TuiProcess) -> None:
    """More than 1 MiB of queued text → 4009 {reason: queue_full}; nothing is dropped silently."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text="[[tokens 100000]] [[delay 2]]")
    assert tui.call("prompt.submit", session_id=sid, text="a" * 600_000)["status"] == "queued"
    full = tui.error("prompt.submit", session_id=sid, text="b" * 600_000)
    assert full.code == 4009 and full.data["reason"] == "queue_full"
    result = tui.call("session.interrupt", session_id=sid)
    assert [len(t) for t in result["discarded_queue"]] == [600_000]


def test_create_with_a_model(tui: TuiProcess) -> None:
    """session.create {model} picks the session's model; an unknown one → 4002."""
    created = tui.call("session.create", model="mock:alt")
    assert created["info"]["model"] == "mock:alt"
    assert tui.error("session.create", model="nosuch:model").code == 4002


def test_two_submits_in_one_write_start_then_queue(tui: TuiProcess) -> None:
    """Two prompt.submit lines arriving together: the first streams, the second is queued."""
    sid = tui.create()
    first = {"id": 301, "method": "prompt.submit", "params": {"session_id": sid, "text": "one [[tokens 50]]"}}
    second = {"id": 302, "method": "prompt.submit", "params": {"session_id": sid, "text": "two"}}
    tui.send_raw((json.dumps(first) + "\n" + json.dumps(second) + "\n").encode())
    assert tui.response(301)["result"] == {"status": "streaming"}
    assert tui.response(302)["result"] == {"status": "queued", "position": 1}
    assert tui.wait_complete(sid, 2)["text"] == "You said: two"
