"""Commands in upstream's Ink TUI on our gateway: ``/model`` by name and through its picker,
``/help``, ``/`` completion and path completion (docs/protocols/tui-gateway.md#using-the-ink-tui)."""

from __future__ import annotations

from pathlib import Path

from tests.tui.ink.bundle import skip_unless_wanted

pytestmark = skip_unless_wanted


def _bar(screen: str) -> str:
    return next((line for line in reversed(screen.splitlines()) if line.startswith(" ─ ")), "")


def test_model_by_name(ink) -> None:
    tui = ink()
    tui.ready()
    tui.submit("/model mock:alt")
    screen = tui.wait_for("model → mock:alt")
    assert "mock:alt" in _bar(screen)
    sent = tui.recording.requests("config.set")[-1]["params"]
    assert sent["key"] == "model" and sent["value"] == "mock:alt"
    tui.submit("hi there")
    tui.wait_for("alt: You said: hi there")
    assert tui.recording.events("session.info")[-1]["payload"]["model"] == "mock:alt"
    assert tui.recording.errors() == []


def test_model_through_the_picker(ink) -> None:
    tui = ink()
    tui.ready()
    tui.submit("/model")
    screen = tui.wait_for("Select provider (step 1/2)")
    assert "Current: echo" in screen
    assert "▸ " in next(line for line in screen.splitlines() if "* Deterministic offline" in line)
    tui.keys("Enter")  # the current provider is selected
    tui.wait_for("Select model (step 2/2)")
    tui.wait_for("▸ 1. echo")
    tui.keys("Down")
    tui.wait_for("▸ 2. script")
    tui.keys("Enter")
    screen = tui.wait_for("model → mock:script")
    assert "mock:script" in _bar(screen)
    sent = tui.recording.requests("config.set")[-1]["params"]
    assert sent["value"] == "script --provider mock --session"
    options = tui.recording.result_of("model.options")["result"]
    mock = next(p for p in options["providers"] if p["slug"] == "mock")
    assert mock["is_current"] and {"echo", "script", "alt", "history"} <= set(mock["models"])
    assert tui.recording.errors() == []


def test_help_shows_our_commands_and_the_hotkeys(ink) -> None:
    tui = ink()
    tui.ready()
    tui.submit("/help")
    screen = tui.wait_for("Hotkeys")
    for command in ("/compress", "/retry", "/undo", "/title"):
        assert command in screen
    catalog = tui.recording.result_of("commands.catalog")["result"]
    assert any(pair[0] == "/compress" for pair in catalog["pairs"])
    assert tui.recording.errors() == []


def test_slash_completion(ink) -> None:
    tui = ink()
    tui.ready()
    tui.type("/")
    screen = tui.wait_for(lambda s: "/compress" in s and "/model" in s, what="the command list")
    assert "completion unavailable" not in screen
    tui.type("retr")
    tui.wait_for(
        lambda s: "Remove your last message and what followed" in s and "/compress" not in s,
        what="only /retry offered",
    )
    tui.keys("Tab")
    tui.wait_for(lambda _s: tui.composer() == "/retry", what="/retry applied")
    assert "/retr" in [r["params"]["text"] for r in tui.recording.requests("complete.slash")]
    assert tui.recording.errors() == []


def test_path_completion(ink, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("print('x')\n", encoding="utf-8")
    (workspace / "setup.cfg").write_text("", encoding="utf-8")
    tui = ink()
    tui.ready()
    tui.type("read ./sr")
    tui.wait_for("src/ dir")
    tui.keys("Tab")
    tui.wait_for(lambda _s: tui.composer() == "read ./src/", what="./src/ applied")
    tui.wait_for("main.py")
    tui.keys("Tab")
    tui.wait_for(lambda _s: tui.composer() == "read ./src/main.py", what="main.py applied")
    words = [r["params"]["word"] for r in tui.recording.requests("complete.path")]
    assert "./sr" in words and "./src/" in words
    assert tui.recording.errors() == []
