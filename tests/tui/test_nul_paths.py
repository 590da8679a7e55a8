"""A NUL character in any path a host sends answers 4002 (4003 in ``cli.exec`` argv), never the
opaque ``-32603`` (docs/reference/tui-gateway.md#error-codes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.tui.client import TuiProcess

NUL_DIR = "/tmp/not\x00a-folder"


def test_every_path_param_with_a_nul_is_a_clear_error(home: Path, spawn: Callable[..., TuiProcess]) -> None:
    tui = spawn()
    sid = tui.create()
    created = tui.error("session.create", cwd=NUL_DIR)
    assert (created.code, created.data) == (4002, {"key": "cwd"})
    assert "NUL" in created.message
    for key in ("cwd", "terminal.cwd", "workdir"):
        moved = tui.error("config.set", session_id=sid, key=key, value=NUL_DIR)
        assert (moved.code, moved.data) == (4002, {"key": "cwd"}), key
    attached = tui.error("image.attach", session_id=sid, path="/tmp/a\x00b.png")
    assert (attached.code, attached.data) == (4002, {"key": "path"})
    tree = tui.error("spawn_tree.load", path=NUL_DIR)
    assert tree.code == 4002
    argv = tui.error("cli.exec", argv=["config", "get", "model\x00x"])
    assert argv.code == 4003 and "NUL" in argv.message
    display = tui.error("config.set", key="skin", value="dark\x00")
    assert display.code == 4002
    assert (home / "config.toml").read_text() == 'model = "mock:echo"\n'
    # Nothing changed and the gateway still works.
    assert tui.call("session.status", session_id=sid)["cwd"] == str(home)
    assert tui.turn(sid, "hi")["text"] == "You said: hi"
    assert "Traceback" not in tui.stderr_text() and "internal error" not in tui.stderr_text()
