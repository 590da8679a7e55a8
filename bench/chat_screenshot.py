"""Regenerate ``docs/chat.png`` from a real tmux capture of ``hermes chat`` (docs/chat.md shows it).

Offline and repeatable: ``hermes chat`` in a private tmux server (100×30) with the mock provider in
a temporary home. It sends a Markdown prompt (the mock echoes it, rendered), has a file edited
(a coloured diff), then asks for a guarded command and leaves the approval open. The pane is
captured with its colours (``tmux capture-pane -e``), read into a screen by pyte and drawn with
Pillow in DejaVu Sans Mono. Not a test; prints the size. Needs tmux and the ``test`` extra.

Run: ``.venv/bin/python bench/chat_screenshot.py [--out docs/chat.png]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyte  # noqa: E402
from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from tests.chat.terminal import Terminal  # noqa: E402

HERMES = str(Path(sys.executable).with_name("hermes"))
COLS, ROWS = 100, 30
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
FONT_BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
SIZE = 15
MAX_BYTES = 200_000
BACKGROUND, FOREGROUND = (30, 30, 36), (220, 220, 220)
PALETTE = {
    "black": (40, 40, 46),
    "red": (224, 96, 96),
    "green": (120, 200, 120),
    "brown": (220, 190, 100),
    "yellow": (220, 190, 100),
    "blue": (110, 150, 230),
    "magenta": (200, 120, 200),
    "cyan": (100, 200, 210),
    "white": (220, 220, 220),
    "brightblack": (128, 128, 136),
    "brightred": (255, 120, 120),
    "brightgreen": (150, 230, 150),
    "brightyellow": (240, 220, 130),
    "brightblue": (140, 180, 255),
    "brightmagenta": (230, 150, 230),
    "brightcyan": (140, 230, 240),
    "brightwhite": (255, 255, 255),
}


def colour(name: str, default: tuple[int, int, int]) -> tuple[int, int, int]:
    if name == "default":
        return default
    if name in PALETTE:
        return PALETTE[name]
    try:
        return (int(name[0:2], 16), int(name[2:4], 16), int(name[4:6], 16))
    except ValueError:
        return default


def capture(home: Path, work: Path, root: Path) -> str:
    """Drive the chat in tmux; return the visible pane with its escape sequences."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "HERMES_HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
    }
    term = Terminal(root, [HERMES, "chat"], env=env, cwd=work, cols=COLS, rows=ROWS)
    try:
        term.wait_screen("mock:echo", timeout=60)
        term.type("Plan for **today**:")
        term.keys("M-Enter", "M-Enter")
        term.type("- read `notes.txt`")
        term.keys("M-Enter")
        term.type("- fix the *typo*")
        term.keys("Enter")
        term.wait_for("fix the typo", count=1)
        term.type('Fix it [[tool edit_file {"path": "notes.txt", "old_string": "teh", "new_string": "the"}]]')
        term.keys("Enter")
        term.wait_for("+fix the tests")
        term.type('And run them [[tool terminal {"command": "pytest -q && echo hermes-guard-test"}]]')
        term.keys("Enter")
        term.wait_screen("[o] once")
        return term._run("capture-pane", "-p", "-e", "-t", term.name)
    finally:
        term.close()


def draw(ansi: str) -> Image.Image:
    screen = pyte.Screen(COLS, ROWS)
    stream = pyte.Stream(screen)
    stream.feed(ansi.replace("\n", "\r\n"))
    regular, bold = ImageFont.truetype(FONT, SIZE), ImageFont.truetype(FONT_BOLD, SIZE)
    cell_w, cell_h = int(regular.getlength("M")), int(SIZE * 1.35)
    pad = 14
    image = Image.new("RGB", (COLS * cell_w + 2 * pad, ROWS * cell_h + 2 * pad), BACKGROUND)
    pen = ImageDraw.Draw(image)
    for y in range(ROWS):
        row = screen.buffer[y]
        for x in range(COLS):
            char = row[x]
            fg, bg = colour(char.fg, FOREGROUND), colour(char.bg, BACKGROUND)
            if char.reverse:
                fg, bg = bg, fg
            x0, y0 = pad + x * cell_w, pad + y * cell_h
            if bg != BACKGROUND:
                pen.rectangle((x0, y0, x0 + cell_w, y0 + cell_h), fill=bg)
            if char.data.strip():
                pen.text((x0, y0 + 2), char.data, font=bold if char.bold else regular, fill=fg)
    return image


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "chat.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home, work = root / "home", root / "work"
        home.mkdir()
        work.mkdir()
        (home / "config.toml").write_text('model = "mock:echo"\n[titles]\nrefine = false\n', encoding="utf-8")
        (work / "notes.txt").write_text("read the notes\nfix teh tests\n", encoding="utf-8")
        ansi = capture(home, work, root)
    image = draw(ansi)
    image.save(args.out, optimize=True)
    size = args.out.stat().st_size
    print(f"{args.out}: {image.width}×{image.height}, {size} bytes")
    if size > MAX_BYTES:
        print(f"larger than {MAX_BYTES} bytes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
