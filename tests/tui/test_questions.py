"""Questions over real stdio: approval, clarify, sudo, secret (checks 15, 16, 17; Pi ui_request)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.timing import scaled
from tests.tui.client import TuiProcess, write_config

SHORT = """model = "mock:echo"
[approvals]
timeout_s = 1
[questions]
clarify_timeout_s = 1
sudo_timeout_s = 1
secret_timeout_s = 1
"""

FAKE_SUDO = """#!/bin/sh
# A stand-in for sudo: never passwordless; with -S it records the password and runs the command.
if [ "$1" = "-n" ]; then exit 1; fi
if [ "$1" = "-S" ]; then
  shift
  read -r pw
  printf '%s' "$pw" > "$(dirname "$0")/password-seen"
fi
exec "$@"
"""


@pytest.fixture(scope="module")
def fakebin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the fake ``sudo``."""
    bindir = tmp_path_factory.mktemp("fakebin")
    script = bindir / "sudo"
    script.write_text(FAKE_SUDO, encoding="utf-8")
    script.chmod(0o755)
    return bindir


def _path_env(bindir: Path) -> dict[str, str]:
    return {"PATH": f"{bindir}:{os.environ.get('PATH', '')}"}


@pytest.fixture(scope="module")
def tui(shared_home: Path, fakebin: Path) -> Iterator[TuiProcess]:
    """This module's gateway: default timeouts, the fake sudo first on PATH."""
    proc = TuiProcess(shared_home, env=_path_env(fakebin), cwd=shared_home)
    proc.wait_event("", "gateway.ready", timeout=20)
    yield proc
    proc.close()


@pytest.fixture(scope="module")
def short(tmp_path_factory: pytest.TempPathFactory, fakebin: Path) -> Iterator[TuiProcess]:
    """A gateway whose question deadlines are all 1 s."""
    home = tmp_path_factory.mktemp("short-home")
    write_config(home, SHORT)
    proc = TuiProcess(home, env=_path_env(fakebin), cwd=home)
    proc.wait_event("", "gateway.ready", timeout=20)
    yield proc
    proc.close()


def test_approval_answered_while_a_slow_method_runs(tui: TuiProcess) -> None:
    """Check 15: tool.start precedes approval.request; deny is answered before a 5 s cli.exec ends."""
    sid = tui.create()
    slow = tui.start("cli.exec", argv=["run", "[[tokens 1]] [[delay 5000]]"], timeout=30)
    tui.call("prompt.submit", session_id=sid, text='[[tool terminal {"command":"echo hermes-guard-test"}]]')
    request = tui.wait_event(sid, "approval.request")["payload"]
    types = [e["type"] for e in tui.events(sid)]
    assert types.index("tool.start") < types.index("approval.request")
    assert request["choices"][0] == "once" and request["choices"][-1] == "deny"
    assert request["pattern_keys"] and request["pattern_key"] == request["pattern_keys"][0]
    started = time.monotonic()
    assert tui.call("approval.respond", session_id=sid, choice="deny") == {"resolved": 1}
    assert time.monotonic() - started < scaled(2)
    assert slow not in tui.col.responses
    tool = tui.wait_event(sid, "tool.complete")["payload"]
    assert "declined" in tool["result"]
    assert tui.wait_complete(sid)["status"] == "complete"
    assert tui.response(slow, timeout=30)["result"]["code"] == 0


def test_approval_choice_validation_and_once(tui: TuiProcess) -> None:
    """A choice that was not offered → 4002 and the approval stays open; `approve` means once."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text='[[tool terminal {"command":"echo hermes-guard-test"}]]')
    request = tui.wait_event(sid, "approval.request")["payload"]
    assert tui.error("approval.respond", session_id=sid, choice="maybe").code == 4002
    assert tui.call("session.status", session_id=sid)["open_requests"] == [
        {"type": "approval", "request_id": request["request_id"]}
    ]
    result = tui.call("approval.respond", session_id=sid, choice="Approve", request_id=request["request_id"])
    assert result == {"resolved": 1}
    tool = tui.wait_event(sid, "tool.complete")["payload"]
    assert "hermes-guard-test" in tool["result"]
    assert tui.error("approval.respond", session_id=sid, request_id="000000000000").code == 4009
    assert tui.call("approval.respond", session_id=sid) == {"resolved": 0}


def test_approval_timeout_denies(short: TuiProcess) -> None:
    """Check 16: approval.expire {reason:timeout}; the tool is denied; a late answer → expired."""
    tui = short
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text='[[tool terminal {"command":"echo hermes-guard-test"}]]')
    request = tui.wait_event(sid, "approval.request")["payload"]
    assert request["timeout_s"] == 1
    expired = tui.wait_event(sid, "approval.expire", timeout=5)["payload"]
    assert expired == {"request_id": request["request_id"], "reason": "timeout"}
    tool = tui.wait_event(sid, "tool.complete")["payload"]
    assert "declined this tool call (timeout)" in tool["result"]
    late = tui.call("approval.respond", session_id=sid, choice="once", request_id=request["request_id"])
    assert late == {"resolved": 0, "status": "expired"}


def test_clarify_answer_expiry_and_unknown_ids(tui: TuiProcess) -> None:
    """Check 17 (clarify): answer → ok, the tool gets it; late → expired; never issued → 4009."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text='[[tool clarify {"question":"Which colour?"}]]')
    request = tui.wait_event(sid, "clarify.request")["payload"]
    assert request["question"] == "Which colour?"
    assert tui.call("clarify.respond", request_id=request["request_id"], answer="teal") == {"status": "ok"}
    tool = tui.wait_event(sid, "tool.complete")["payload"]
    assert "teal" in tool["result"]
    tui.wait_idle(sid)
    assert tui.call("clarify.respond", request_id=request["request_id"], answer="x") == {"status": "expired"}
    assert tui.error("clarify.respond", request_id="abcdefabcdef", answer="x").code == 4009
    assert tui.error("clarify.respond", request_id=7, answer="x").code == -32602
    assert tui.error("clarify.respond", request_id="abcdefabcdef", answer=None).code == -32602


def test_clarify_expires_unanswered(short: TuiProcess) -> None:
    """Check 17: an unanswered clarify ends with clarify.expire {request_id, reason:timeout}."""
    tui = short
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text='[[tool clarify {"question":"Hm?"}]]')
    request = tui.wait_event(sid, "clarify.request")["payload"]
    expired = tui.wait_event(sid, "clarify.expire", timeout=5)["payload"]
    assert expired == {"request_id": request["request_id"], "reason": "timeout"}
    assert tui.wait_complete(sid)["status"] == "complete"


def test_interrupt_expires_open_questions(tui: TuiProcess) -> None:
    """docs/reference/tui-gateway.md#question-lifecycle: session.interrupt releases the turn's question with
    <kind>.expire {reason:interrupted}."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text='[[tool clarify {"question":"Wait?"}]]')
    request = tui.wait_event(sid, "clarify.request")["payload"]
    status = tui.call("session.status", session_id=sid)
    assert status["status"] == "waiting"
    tui.call("session.interrupt", session_id=sid)
    expired = tui.wait_event(sid, "clarify.expire")["payload"]
    assert expired == {"request_id": request["request_id"], "reason": "interrupted"}
    assert tui.wait_complete(sid)["status"] == "interrupted"


def test_sudo_password_reaches_the_tool_and_no_frame(tui: TuiProcess, fakebin: Path) -> None:
    """Check 17 (sudo): approve, answer the password; it reaches the command and appears nowhere else."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text="[[sudo echo root-things]]")
    approval = tui.wait_event(sid, "approval.request")["payload"]
    tui.call("approval.respond", session_id=sid, choice="once", request_id=approval["request_id"])
    request = tui.wait_event(sid, "sudo.request")["payload"]
    assert request["timeout_s"] > 0
    secret = "hunter2-SUPERSECRET"
    assert tui.call("sudo.respond", request_id=request["request_id"], password=secret) == {"status": "ok"}
    assert tui.wait_complete(sid)["status"] == "complete"
    assert (fakebin / "password-seen").read_text() == secret
    stdout = b"".join(tui.raw_lines).decode("utf-8")
    assert secret not in stdout
    assert secret not in tui.stderr_text()


def test_sudo_expires_unanswered(short: TuiProcess) -> None:
    """Check 17: an unanswered sudo request ends with sudo.expire; a late answer → expired."""
    tui = short
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text="[[sudo echo hi]]")
    approval = tui.wait_event(sid, "approval.request")["payload"]
    tui.call("approval.respond", session_id=sid, choice="once", request_id=approval["request_id"])
    request = tui.wait_event(sid, "sudo.request")["payload"]
    expired = tui.wait_event(sid, "sudo.expire", timeout=5)["payload"]
    assert expired == {"request_id": request["request_id"], "reason": "timeout"}
    assert tui.call("sudo.respond", request_id=request["request_id"], password="pw") == {"status": "expired"}


def test_secret_is_stored_and_never_echoed(tui: TuiProcess) -> None:
    """Check 17 (secret): the value goes to .env, appears in no frame or stderr; a newline → 4002."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text="[[secret MY_API_TOKEN]]")
    request = tui.wait_event(sid, "secret.request")["payload"]
    assert request["env_var"] == "MY_API_TOKEN"
    assert tui.error("secret.respond", request_id=request["request_id"], value="a\nb").code == 4002
    value = "sk-verysecret-0123456789"
    assert tui.call("secret.respond", request_id=request["request_id"], value=value) == {"status": "ok"}
    assert tui.wait_complete(sid)["status"] == "complete"
    assert value in (tui.home / ".env").read_text()
    events = "".join(json.dumps(f) for f in tui.col.frames if f.get("method") == "event")
    assert value not in events
    assert value not in tui.stderr_text()


def test_secret_expires_unanswered(short: TuiProcess) -> None:
    """Check 17: an unanswered secret request ends with secret.expire."""
    tui = short
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text="[[secret OTHER_VAR]]")
    request = tui.wait_event(sid, "secret.request")["payload"]
    expired = tui.wait_event(sid, "secret.expire", timeout=5)["payload"]
    assert expired["request_id"] == request["request_id"]


def test_close_expires_open_questions_as_closed(tui: TuiProcess) -> None:
    """docs/reference/tui-gateway.md#question-lifecycle: session.close ends an open question with
    <kind>.expire {reason:closed}."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text='[[tool clarify {"question":"Still there?"}]]')
    request = tui.wait_event(sid, "clarify.request")["payload"]
    assert tui.call("session.close", session_id=sid) == {"closed": True}
    expired = tui.wait_event(sid, "clarify.expire")["payload"]
    assert expired == {"request_id": request["request_id"], "reason": "closed"}
    assert tui.events(sid, "message.complete")[-1]["payload"]["status"] == "interrupted"


def test_approval_all_resolves_every_open_one(tui: TuiProcess) -> None:
    """approval.respond {all:true} answers every open approval of the session (here: one)."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text='[[tool terminal {"command":"echo hermes-guard-test"}]]')
    tui.wait_event(sid, "approval.request")
    assert tui.call("approval.respond", session_id=sid, choice="deny", all=True) == {"resolved": 1}
    assert tui.wait_complete(sid)["status"] == "complete"
