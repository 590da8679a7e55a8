"""The frame contract with upstream's Ink TUI, without Node: the requests the TUI makes in its flows
(startup, a turn, each question kind, commands, sessions, delegation), sent by a script over real
stdio, and every frame the gateway sends checked against the fields the TUI reads
(tests/tui/ink/contract.py). The Ink TUI tests check the real TUI's frames the same way."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.timing import scaled
from tests.tui.client import TuiProcess, write_config
from tests.tui.ink.contract import (
    EVENTS,
    INK_TUI_METHODS,
    RESULTS,
    SESSION_INFO,
    check_frames,
    problems,
)

FAKE_SUDO = """#!/bin/sh
if [ "$1" = "-n" ]; then exit 1; fi
if [ "$1" = "-S" ]; then shift; read -r pw; fi
exec "$@"
"""


class InkScript:
    """Send what the Ink TUI sends (string ids ``r1``, ``r2``…, the TUI's params) and keep it all."""

    def __init__(self, proc: TuiProcess) -> None:
        self.proc = proc
        self.requests: dict[Any, dict[str, Any]] = {}
        self.n = 0

    def rpc(self, method: str, **params: Any) -> dict[str, Any]:
        self.n += 1
        rid = f"r{self.n}"
        frame = {"id": rid, "jsonrpc": "2.0", "method": method, "params": params}
        self.requests[rid] = frame
        self.proc.send(frame)
        response = self.proc.response(rid, timeout=scaled(30))
        assert "error" not in response, f"{method} -> {response['error']}"
        return dict(response["result"])

    def startup(self) -> str:
        self.proc.wait_event("", "gateway.ready", timeout=scaled(30))
        self.rpc("config.get", key="full")
        self.rpc("commands.catalog")
        assert self.rpc("setup.status")["provider_configured"] is True
        sid = str(self.rpc("session.create", cols=120)["session_id"])
        self.rpc("config.get", key="mtime")
        self.rpc("session.active_list", current_session_id=sid)
        self.rpc("pet.cells", graphics=True, state="idle")
        self.rpc("terminal.resize", cols=100, session_id=sid)
        return sid

    def prompt(self, sid: str, text: str) -> None:
        before = len(self.proc.events(sid, "message.complete"))
        self.rpc("input.detect_drop", session_id=sid, text=text)
        self.rpc("prompt.submit", session_id=sid, text=text)
        self.proc.wait_complete(sid, before + 1, timeout=scaled(30))
        self.proc.wait_idle(sid, timeout=scaled(30))


def test_every_frame_of_the_flows_has_what_the_tui_reads(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home, 'model = "mock:echo"\n[tui]\nanswer_settle_s = 0\n')
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "sudo").write_text(FAKE_SUDO, encoding="utf-8")
    (bindir / "sudo").chmod(0o755)
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    env = {"PATH": f"{bindir}:{os.environ.get('PATH', '')}"}
    with TuiProcess(home, env=env, cwd=work) as proc:
        tui = InkScript(proc)
        sid = tui.startup()
        # a streamed turn, the completions, the commands
        tui.prompt(sid, "hello [[tokens 30]] [[reason thinking first]]")
        tui.rpc("complete.slash", text="/mo")
        tui.rpc("complete.path", word="./s")
        tui.rpc("model.options", session_id=sid, include_unconfigured=True)
        tui.rpc("config.set", key="model", session_id=sid, value="alt --provider mock --session")
        tui.rpc("config.set", key="model", session_id=sid, value="mock:echo", confirm_expensive_model=False)
        tui.rpc("slash.exec", command="title contract flow", session_id=sid)
        tui.rpc("session.usage", session_id=sid)
        tui.rpc("session.status", session_id=sid)
        tui.rpc("shell.exec", command="ls")
        # every question kind
        turns = len(proc.events(sid, "message.complete"))
        proc.call(
            "prompt.submit", session_id=sid, text='[[tool terminal {"command": "echo hermes-guard-test"}]]'
        )
        proc.wait_event(sid, "approval.request")
        tui.rpc("approval.respond", choice="once", session_id=sid)
        proc.wait_complete(sid, turns + 1, timeout=scaled(30))
        proc.wait_idle(sid, timeout=scaled(30))
        turns = len(proc.events(sid, "message.complete"))
        proc.call(
            "prompt.submit", session_id=sid, text='[[tool clarify {"question": "Q?", "choices": ["a"]}]]'
        )
        clarify = proc.wait_event(sid, "clarify.request")["payload"]
        tui.rpc("clarify.respond", answer="a", request_id=clarify["request_id"])
        proc.wait_complete(sid, turns + 1, timeout=scaled(30))
        proc.wait_idle(sid, timeout=scaled(30))
        turns = len(proc.events(sid, "message.complete"))
        proc.call("prompt.submit", session_id=sid, text="[[sudo echo hi]]")
        proc.wait_event(sid, "approval.request", count=2)
        tui.rpc("approval.respond", choice="session", session_id=sid)
        sudo = proc.wait_event(sid, "sudo.request")["payload"]
        tui.rpc("sudo.respond", password="pw", request_id=sudo["request_id"])
        proc.wait_complete(sid, turns + 1, timeout=scaled(30))
        proc.wait_idle(sid, timeout=scaled(30))
        turns = len(proc.events(sid, "message.complete"))
        proc.call("prompt.submit", session_id=sid, text="[[secret CONTRACT_KEY]]")
        secret = proc.wait_event(sid, "secret.request")["payload"]
        tui.rpc("secret.respond", request_id=secret["request_id"], value="v")
        proc.wait_complete(sid, turns + 1, timeout=scaled(30))
        proc.wait_idle(sid, timeout=scaled(30))
        # an interrupt, undo, compress
        done = len(proc.events(sid, "message.complete"))
        deltas = len(proc.events(sid, "message.delta"))
        proc.call("prompt.submit", session_id=sid, text="[[tokens 500]] [[delay 20]]")
        proc.wait_event(sid, "message.delta", count=deltas + 2)
        tui.rpc("session.interrupt", session_id=sid)
        assert proc.wait_complete(sid, done + 1, timeout=scaled(30))["status"] == "interrupted"
        proc.wait_idle(sid, timeout=scaled(30))
        tui.rpc("session.undo", session_id=sid)
        tui.rpc("session.compress", session_id=sid)
        # delegation
        tui.prompt(
            sid, '[[tool delegate_task {"tasks": [{"goal": "a [[tokens 3]]"}, {"goal": "b [[tokens 3]]"}]}]]'
        )
        tui.rpc("delegation.status")
        tui.rpc("spawn_tree.list", limit=30, session_id=sid)
        tui.rpc("command.dispatch", name="usage", arg="", session_id=sid)
        tui.rpc("delegation.pause", paused=True)
        tui.rpc("delegation.pause", paused=False)
        tui.rpc("spawn_tree.save", session_id=sid, subagents=[{"id": "x", "goal": "a"}], label="a")
        # sessions: a second one, the switcher, resume
        other = str(tui.rpc("session.create", cols=120)["session_id"])
        tui.prompt(other, "second session")
        tui.rpc("session.list", limit=200)
        tui.rpc("session.activate", session_id=sid)
        tui.rpc("session.close", session_id=other)
        tui.rpc("session.resume", cols=120, session_id=other)
        tui.rpc("session.most_recent")
        tui.rpc("session.save", session_id=sid)
        sent = [f for f in proc.col.frames if "unparsable" not in f]
    problems_found = check_frames(tui.requests, sent)
    assert problems_found == []
    seen = {f["params"]["type"] for f in sent if f.get("method") == "event"}
    # the flows really produced the events the table describes
    for kind in ("approval.request", "clarify.request", "sudo.request", "secret.request", "reasoning.delta"):
        assert kind in seen
    assert {"subagent.start", "subagent.complete", "tool.start", "tool.complete", "message.delta"} <= seen
    checked = {str(r["method"]) for r in tui.requests.values()} & set(RESULTS)
    assert len(checked) >= 20


def test_the_checker_catches_a_dropped_field() -> None:
    """A ``session.info`` without ``skills``, or with a null model, is reported, not passed."""
    info = {"model": "mock:echo", "tools": {"tools": ["terminal"]}, "skills": {}, "cwd": "/w"}
    assert problems(info, SESSION_INFO, "info") == []
    dropped = {k: v for k, v in info.items() if k != "skills"}
    assert problems(dropped, SESSION_INFO, "info") == ["info.skills: missing"]
    assert problems({**info, "model": None}, SESSION_INFO, "info") == [
        "info.model: expected str, got NoneType"
    ]
    assert problems({**info, "tools": ["terminal"]}, SESSION_INFO, "info") == [
        "info.tools: expected an object, got list"
    ]
    event = {
        "jsonrpc": "2.0",
        "method": "event",
        "params": {"type": "tool.start", "payload": {"tool_id": "t"}},
    }
    assert check_frames({}, [event]) == [
        "event tool.start.name: missing",
        "event tool.start.context: missing",
    ]
    assert set(EVENTS) >= {"message.complete", "approval.request", "subagent.tool"}


JUNK: tuple[dict[str, Any], ...] = (
    {},
    {"session_id": 7, "text": ["x"], "command": 3.5, "key": {}, "value": [], "paused": "yes"},
    {"session_id": "", "text": "\x00", "word": "\x00", "name": None, "request_id": 5, "answer": {}},
)


def test_every_method_the_tui_calls_is_answered(tmp_path: Path) -> None:
    """Every method in the bundle (INK_TUI_METHODS), with no params or junk ones: a result, or a
    -32602 / 4xxx / 5xxx error saying what is wrong; never -32601 (unknown) or -32603 (a crash).
    A method outside the list is still -32601."""
    home = tmp_path / "home"
    write_config(home, 'model = "mock:echo"\n')
    with TuiProcess(home, cwd=tmp_path) as proc:
        sid = proc.create()
        bad: list[str] = []
        requests: dict[Any, dict[str, Any]] = {}
        for method in INK_TUI_METHODS:
            for params in (*JUNK, {"session_id": sid}):
                rid = proc.start(method, params)
                requests[rid] = {"method": method, "params": params}
                frame = proc.response(rid, timeout=scaled(30))
                code = frame.get("error", {}).get("code")
                if code is not None and not (code == -32602 or 4000 <= code < 6000):
                    bad.append(f"{method} {params}: {frame['error']}")
        assert bad == []
        # and what did succeed has the fields the TUI reads
        assert check_frames(requests, [f for f in proc.col.frames if "unparsable" not in f]) == []
        assert proc.error("pets.feed").code == -32601
        assert proc.call("gateway.ping")["ok"] is True
