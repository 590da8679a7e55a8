"""cli.exec, attachments, reload, processes, subagents and spawn trees over real stdio (checks 27, 28)."""

from __future__ import annotations

import os
import struct
import time
import zlib
from pathlib import Path

from tests.timing import eventually_sync, scaled
from tests.tui.client import TuiProcess


def _png(path: Path, width: int, height: int) -> Path:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\x00\x00\x00" * width for _ in range(height))
    body = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return path


def test_cli_exec(tui: TuiProcess, tmp_path: Path) -> None:
    """Check 27: --version → code 0; tui → blocked; a timeout → 5016 and the group is gone; output cap."""
    version = tui.call("cli.exec", argv=["--version"])
    assert version["code"] == 0 and version["blocked"] is False and "hermes" in version["output"]
    blocked = tui.call("cli.exec", argv=["tui"])
    assert blocked["blocked"] is True and blocked["code"] == -1 and blocked["hint"]
    assert tui.call("cli.exec", argv=["tui", "--help"])["blocked"] is False
    assert tui.error("cli.exec", argv="--version").code == 4003
    assert tui.error("cli.exec", {"argv": ["--version"], "timeout": 0}).code == -32602
    started = time.monotonic()
    slow = tui.error("cli.exec", {"argv": ["run", "[[tokens 1]] [[delay 20000]]"], "timeout": 1})
    assert slow.code == 5016
    assert time.monotonic() - started < scaled(8)
    big = tui.call("cli.exec", argv=["run", "[[tokens 20000]]"], timeout=60)
    assert big["truncated"] is True and len(big["output"]) == 48_000


def test_cli_exec_kills_the_whole_group(tui: TuiProcess, tmp_path: Path) -> None:
    """Check 27: after a 5016 no process of the command's group is left."""
    before = {p for p in os.listdir("/proc") if p.isdigit()}
    assert tui.error("cli.exec", {"argv": ["run", "[[tokens 1]] [[delay 20000]]"], "timeout": 1}).code == 5016

    def left() -> list[str]:
        found = []
        for pid in {p for p in os.listdir("/proc") if p.isdigit()} - before:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"delay 20000" in cmdline:
                found.append(pid)
        return found

    eventually_sync(lambda: left() == [], timeout=5, what="every process of the group to exit")


def test_attachments(tui: TuiProcess, tmp_path: Path) -> None:
    """Check 28: headless clipboard → attached:false; missing file → 4016; a PNG → attached, estimated."""
    sid = tui.create(cwd=str(tmp_path))
    pasted = tui.call("clipboard.paste", session_id=sid)
    assert pasted["attached"] is False and pasted["message"]
    assert tui.error("image.attach", session_id=sid, path="missing.png").code == 4016
    assert tui.error("image.attach", session_id=sid, path="").code == 4015
    (tmp_path / "notes.txt").write_text("hi")
    assert tui.error("image.attach", session_id=sid, path="notes.txt").code == 4016
    _png(tmp_path / "shot one.png", 600, 300)
    attached = tui.call("image.attach", session_id=sid, path='"shot one.png" what is this?')
    assert attached["attached"] is True and attached["count"] == 1
    assert attached["width"] == 600 and attached["height"] == 300
    assert attached["token_estimate"] == 85 * 2 * 1
    assert attached["remainder"] == "what is this?"
    done = tui.turn(sid, "look")
    assert done["status"] == "complete"


def test_subagents_and_spawn_trees(tui: TuiProcess) -> None:
    """Nothing delegated yet: no children, the default limits; spawn trees save, list and load safely."""
    assert tui.call("delegation.status") == {
        "active": [],
        "paused": False,
        "max_spawn_depth": 1,
        "max_concurrent_children": 3,
        "max_background_children": 2,
        "max_child_tool_rounds": 20,
    }
    assert tui.error("subagent.interrupt").code == 4000
    assert tui.call("subagent.interrupt", subagent_id="sa_1") == {"found": False, "subagent_id": "sa_1"}
    sid = tui.create()
    steered = tui.call("subagent.steer", session_id=sid, subagent_id="sa_1", text="hi")
    assert steered["status"] == "rejected"
    assert tui.error("spawn_tree.save", subagents=[]).code == 4000
    assert tui.error("spawn_tree.save", subagents=[1]).code == -32602
    first = tui.call("spawn_tree.save", session_id=sid, subagents=[{"id": "a"}], label="run")
    second = tui.call("spawn_tree.save", session_id=sid, subagents=[{"id": "b"}])
    assert first["path"] != second["path"]
    entries = tui.call("spawn_tree.list", session_id=sid)["entries"]
    assert {e["path"] for e in entries} == {first["path"], second["path"]}
    assert tui.call("spawn_tree.load", path=first["path"])["subagents"] == [{"id": "a"}]
    assert tui.error("spawn_tree.load", path=str(tui.home / "config.toml")).code == 4030
    escape = str(Path(first["path"]).parent / ".." / ".." / "config.toml")
    assert tui.error("spawn_tree.load", path=escape).code == 4030
    assert tui.error("spawn_tree.load").code == 4000


def test_reload_and_processes(tui: TuiProcess) -> None:
    """reload.mcp with no MCP plugin → no servers; reload.env counts changes; process.stop kills none."""
    sid = tui.create()
    assert tui.call("reload.mcp", session_id=sid, confirm=True) == {"status": "reloaded", "servers": []}
    (tui.home / ".env").write_text('OPENAI_API_KEY="sk-test-reload"\n')
    assert tui.call("reload.env")["updated"] >= 1
    assert tui.call("process.stop") == {"killed": 0}
    assert tui.call("process.stop", session_id="unknown") == {"killed": 0}
    assert tui.call("terminal.resize", session_id=sid, cols=5) == {"cols": 20}
    assert tui.error("terminal.resize", session_id=sid, cols="x").code == -32602
