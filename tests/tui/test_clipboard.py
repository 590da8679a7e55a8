"""``clipboard.paste`` with fake clipboard tools on ``PATH``
(docs/reference/tui-gateway.md#terminal-and-attachments), through a real ``hermes tui``.

Each fake is a small Python script named like the real tool. The gateway's ``PATH`` is one
directory holding only the fakes of the current test, so no real clipboard tool of the test machine
can answer instead.
"""

from __future__ import annotations

import base64
import struct
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tui.client import TuiProcess, write_config


def _png_bytes(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\x00\x00\x00" * width for _ in range(height))
    body = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    return b"\x89PNG\r\n\x1a\n" + body + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def _fake(
    bin_dir: Path, name: str, expect_argv: list[str], stdout: bytes, code: int = 0, err: str = ""
) -> None:
    """Write a fake tool that checks its arguments, prints ``stdout`` and exits with ``code``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / name
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"if sys.argv[1:{len(expect_argv) + 1}] != {expect_argv!r}:\n"
        "    sys.stderr.write('unexpected arguments: %r\\n' % sys.argv[1:]); sys.exit(64)\n"
        f"sys.stderr.write({err!r})\n"
        f"sys.stdout.buffer.write({stdout!r})\n"
        f"sys.exit({code})\n",
        encoding="utf-8",
    )
    script.chmod(0o755)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TuiProcess, Path]]:
    """One gateway whose ``PATH`` is a single directory that each test fills with its fakes."""
    home = tmp_path_factory.mktemp("clip-home")
    write_config(home)
    bin_dir = tmp_path_factory.mktemp("clip-bin")
    proc = TuiProcess(home, env={"PATH": str(bin_dir)}, cwd=home)
    yield proc, bin_dir
    proc.close()


@pytest.fixture
def bin_dir(clip: tuple[TuiProcess, Path]) -> Path:
    """The gateway's (emptied) ``PATH`` directory."""
    for old in clip[1].iterdir():
        old.unlink()
    return clip[1]


def _paste(clip: tuple[TuiProcess, Path]) -> tuple[TuiProcess, str, dict[str, object]]:
    tui = clip[0]
    sid = tui.create()
    result: dict[str, object] = tui.call("clipboard.paste", session_id=sid, timeout=15)
    return tui, sid, result


def test_clipboard_without_tools(clip: tuple[TuiProcess, Path], bin_dir: Path) -> None:
    """No clipboard tool at all → ``attached:false`` saying so; not an error."""
    _tui, _sid, result = _paste(clip)
    assert result == {"attached": False, "message": "no clipboard available on this machine"}


def test_clipboard_pngpaste(clip: tuple[TuiProcess, Path], bin_dir: Path) -> None:
    """macOS ``pngpaste -``: the PNG is saved under the data dir and attached to the next turn."""
    _fake(bin_dir, "pngpaste", ["-"], _png_bytes(600, 100))
    tui, sid, result = _paste(clip)
    assert result["attached"] is True and result["count"] == 1
    assert (result["width"], result["height"], result["token_estimate"]) == (600, 100, 170)
    saved = Path(str(result["path"]))
    assert saved.parent == tui.home / "attachments" / sid and saved.read_bytes() == _png_bytes(600, 100)
    assert tui.turn(sid, "look")["status"] == "complete"


def test_clipboard_osascript(clip: tuple[TuiProcess, Path], bin_dir: Path) -> None:
    """macOS without pngpaste: ``osascript`` prints «data PNGf…» hex, decoded to the image."""
    png = _png_bytes(10, 20)
    out = b"\xc2\xabdata PNGf" + png.hex().upper().encode() + b"\xc2\xbb\n"
    _fake(bin_dir, "osascript", ["-e", "the clipboard as «class PNGf»"], out)
    _tui, _sid, result = _paste(clip)
    assert result["attached"] is True and (result["width"], result["height"]) == (10, 20)


def test_clipboard_powershell(clip: tuple[TuiProcess, Path], bin_dir: Path) -> None:
    """Windows / WSL ``powershell.exe``: base64 PNG on stdout; empty stdout means no image."""
    png = _png_bytes(30, 40)
    _fake(bin_dir, "powershell.exe", ["-NoProfile", "-NonInteractive"], base64.b64encode(png) + b"\r\n")
    _tui, _sid, result = _paste(clip)
    assert result["attached"] is True and (result["width"], result["height"]) == (30, 40)

    _fake(bin_dir, "powershell.exe", ["-NoProfile", "-NonInteractive"], b"")
    _tui, _sid, empty = _paste(clip)
    assert empty == {"attached": False, "message": "the clipboard holds no image"}


def test_clipboard_tools_fail(clip: tuple[TuiProcess, Path], bin_dir: Path) -> None:
    """Tools that exist but fail (no display) → ``attached:false`` naming the failure."""
    _fake(
        bin_dir,
        "xclip",
        ["-selection", "clipboard"],
        b"",
        code=1,
        err="Error: Can't open display: \n",
    )
    _fake(
        bin_dir,
        "wl-paste",
        ["--no-newline"],
        b"",
        code=1,
        err="Failed to connect to a Wayland server\n",
    )
    _tui, _sid, result = _paste(clip)
    assert result["attached"] is False
    message = str(result["message"])
    assert "Can't open display" in message and "Wayland" in message
