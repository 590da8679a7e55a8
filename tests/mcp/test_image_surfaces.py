"""A tool result with an image through the TUI gateway: the caption shows, the session goes on."""

from __future__ import annotations

from pathlib import Path

from tests.mcp.test_surfaces import server_toml
from tests.tui.client import TuiProcess, write_config


def test_tui_shows_an_image_result_as_its_caption(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home, 'model = "mock:echo"\n' + server_toml(extra='include = ["picture"]\n'))
    tui = TuiProcess(home, cwd=home)
    try:
        tui.wait_event("", "gateway.ready", timeout=20)
        sid = tui.create()
        answer = tui.call("reload.mcp", session_id=sid, confirm=True, timeout=40)
        assert [(s["name"], s["state"], s["tools"]) for s in answer["servers"]] == [("tiny", "ready", 1)]
        done = tui.turn(sid, "[[tool mcp_tiny_picture {}]]", timeout=60)
        assert done["status"] == "complete"
        result = tui.wait_event(sid, "tool.complete", timeout=30)["payload"]
        assert (result["name"], result["result"]) == ("mcp_tiny_picture", "a tiny picture")
        assert "error" not in result
        # The stored image goes along with the history of the next turn without trouble.
        assert tui.turn(sid, "again", timeout=60)["status"] == "complete"
    finally:
        tui.close()
