"""Configuration, models and slash commands over real stdio (checks 23, 24, 30; Pi set_model)."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

from tests.tui.client import TuiProcess


def test_model_switch_by_slash_command(tui: TuiProcess) -> None:
    """Check 23 / Pi set_model: /model mock:alt → exec; info and config.get agree, also after resume."""
    sid = tui.create()
    tui.turn(sid, "before")
    directive = tui.call("command.dispatch", session_id=sid, command="/model mock:alt")
    assert directive["type"] == "exec" and "mock:alt" in directive["output"]
    info = tui.wait_event(sid, "session.info", where=lambda e: e["payload"]["model"] == "mock:alt")
    assert info["payload"]["provider"] == "mock"
    assert tui.call("config.get", key="model", session_id=sid)["value"] == "mock:alt"
    tui.call("session.close", session_id=sid)
    resumed = tui.call("session.resume", session_id=sid)
    assert resumed["info"]["model"] == "mock:alt"
    assert tui.call("config.get", key="model", session_id=sid) == {
        "value": "mock:alt",
        "model": "alt",
        "provider": "mock",
    }
    history = [m["text"] for m in resumed["messages"]]
    assert history == ["before", "You said: before"]
    tui.call("prompt.submit", session_id=sid, text="[[tokens 300]] [[delay 3]]")
    assert tui.error("command.dispatch", session_id=sid, command="/model mock:echo").code == 4009
    assert tui.error("config.set", session_id=sid, key="model", value="mock:echo").code == 4009


def test_model_switch_by_config_set(tui: TuiProcess) -> None:
    """Check 23: config.set {key:model} is the same switch; bare names resolve; unknown → 4002."""
    sid = tui.create()
    result = tui.call("config.set", session_id=sid, key="model", value="mock:alt")
    assert result["model"] == "alt" and result["provider"] == "mock" and result["scope"] == "session"
    assert tui.call("session.status", session_id=sid)["model"] == "mock:alt"
    bare = tui.call("command.dispatch", {"name": "model", "arg": "echo"}, session_id=sid)
    assert bare["type"] == "exec"
    assert tui.call("config.get", key="model", session_id=sid)["value"] == "mock:echo"
    assert tui.error("config.set", session_id=sid, key="model", value="nosuch:model").code == 4002
    shown = tui.call("command.dispatch", session_id=sid, command="/model")
    assert shown["type"] == "exec" and "mock:echo" in shown["output"]


def test_config_errors(tui: TuiProcess) -> None:
    """Check 24: unknown keys and values → 4002 with data.allowed; a missing value → -32602."""
    assert tui.error("config.get", key="nope").code == 4002
    busy = tui.error("config.set", key="busy", value="x")
    assert busy.code == 4002 and busy.data["allowed"] == ["queue", "steer", "interrupt"]
    assert tui.error("config.set", key="busy").code == -32602
    assert tui.error("config.set", key="full", value="x").code == 4002
    assert tui.error("config.set", key="approval_mode", value="smart").code == 4002
    assert tui.error("config.set", key="reasoning", value="ultra").code == 4002
    sid = tui.create()
    assert tui.error("config.set", session_id=sid, key="cwd", value="/definitely/missing").code == 4017


def test_session_settings(tui: TuiProcess) -> None:
    """Session-scoped settings change session.info; yolo maps to the off profile."""
    sid = tui.create()
    tui.call("config.set", session_id=sid, key="busy", value="steer")
    assert tui.call("config.get", session_id=sid, key="busy") == {"value": "steer"}
    tui.call("config.set", session_id=sid, key="yolo", value="1")
    assert tui.call("config.get", session_id=sid, key="yolo") == {"value": "1"}
    assert tui.call("config.get", session_id=sid, key="approval_mode") == {"value": "off"}
    tui.call("config.set", session_id=sid, key="approvals.mode", value="manual")
    assert tui.call("config.get", session_id=sid, key="approval_mode") == {"value": "default"}
    tui.call("config.set", session_id=sid, key="reasoning", value="high")
    assert tui.call("config.get", session_id=sid, key="reasoning")["value"] == "high"
    tui.call("config.set", key="skin", value="midnight")
    assert tui.call("config.get", key="skin") == {"value": "midnight"}
    assert tui.events(sid, "session.info")[-1]["payload"]["reasoning_effort"] == "high"


def test_busy_policy_steer_delivers_into_the_running_turn(tui: TuiProcess) -> None:
    """busy=steer: a submit during a tool turn is steered into it."""
    sid = tui.create()
    tui.call("config.set", session_id=sid, key="busy", value="steer")
    tui.call("prompt.submit", session_id=sid, text='[[tool terminal {"command":"sleep 1"}]]')
    tui.wait_event(sid, "tool.start")
    assert tui.call("prompt.submit", session_id=sid, text="use spaces") == {"status": "steered"}
    assert tui.wait_complete(sid)["text"].endswith(" / Steer: use spaces")


def test_model_options_and_catalog(tui: TuiProcess) -> None:
    """model.options uses the core catalog; commands.catalog and command.resolve cover the plugins."""
    sid = tui.create()
    options = tui.call("model.options", session_id=sid, refresh="yes")
    mock = next(p for p in options["providers"] if p["slug"] == "mock")
    assert mock["is_current"] is True and "alt" in mock["models"]
    assert options["provider"] == "mock" and options["model"] == "echo"
    catalog = tui.call("commands.catalog")
    names = [pair[0] for pair in catalog["pairs"]]
    assert "/help" in names and "/model" in names
    assert tui.call("command.resolve", name="help")["canonical"] == "/help"
    assert tui.error("command.resolve", name="nosuch").code == 4011
    assert tui.error("command.dispatch", session_id=sid, command="/nosuch").code == 4018
    assert tui.error("command.dispatch", session_id=sid).code == -32602
    helped = tui.call("slash.exec", session_id=sid, command="/help")
    assert "output" in helped and "/model" in helped["output"]


def test_without_the_model_switch_plugin(spawn: Callable[..., TuiProcess]) -> None:
    """Check 30: with model-switch disabled, config.set model and model.options work; /model → 4018."""
    tui = spawn(env={"HERMES_DISABLE_PLUGINS": "model-switch"})
    sid = tui.create()
    result = tui.call("config.set", key="model", value="mock:alt", session_id=sid)
    assert result["model"] == "alt"
    assert tui.call("session.status", session_id=sid)["model"] == "mock:alt"
    assert tui.call("model.options")["providers"]
    assert tui.error("command.dispatch", session_id=sid, command="/model x").code == 4018


def test_global_model_without_a_session(spawn: Callable[..., TuiProcess], home: Path) -> None:
    """config.set model without a session writes config.toml and is the model of new sessions."""
    tui = spawn()
    tui.wait_event("", "gateway.ready", timeout=20)
    result = tui.call("config.set", key="model", value="mock:alt")
    assert (result["value"], result["scope"]) == ("mock:alt", "global")
    assert tomllib.loads((home / "config.toml").read_text())["model"] == "mock:alt"
    sid = tui.create()
    assert tui.turn(sid, "hi")["text"] == "alt: You said: hi"
    bad = tui.error("config.set", key="model", value="nosuch:model")
    assert bad.code == 4002
    assert tomllib.loads((home / "config.toml").read_text())["model"] == "mock:alt"
