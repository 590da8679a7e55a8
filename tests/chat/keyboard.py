"""Run the interactive chat in this process: prompt_toolkit's pipe input, a recorded output.

The chat is the real one (its gateway is a real ``hermes tui`` it spawns); only the terminal is
replaced. :class:`Keyboard` types into the pipe, and :meth:`Keyboard.text` is what the terminal
received with the escape sequences taken out, so tests read it by content.
"""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path
from typing import Any

from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import PipeInput
from prompt_toolkit.output.vt100 import Vt100_Output

from hermes_chat.app import ChatApp
from hermes_chat.link import SpawnConnector, gateway_argv
from tests.timing import eventually

ANSI = re.compile(r"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-Za-z]|[=>78]|\[\?[0-9;]*[hl])")

ENTER, ALT_ENTER, CTRL_C, CTRL_D, TAB, ESC_ESC, UP = (
    "\r",
    "\x1b\r",
    "\x03",
    "\x04",
    "\t",
    "\x1b\x1b",
    "\x1b[A",
)


def bracketed(text: str) -> str:
    """Return ``text`` as a terminal sends a paste (bracketed paste mode)."""
    return f"\x1b[200~{text}\x1b[201~"


class Recorder(io.StringIO):
    """A terminal's output side that keeps everything written to it."""

    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


class Keyboard:
    """One in-process chat and the keys typed into it."""

    def __init__(self, app: ChatApp, pipe: PipeInput, recorded: Recorder, task: asyncio.Task[int]) -> None:
        self.app = app
        self.pipe = pipe
        self.recorded = recorded
        self.task = task

    def send(self, *keys: str) -> None:
        """Type keys (text, or the constants above)."""
        for key in keys:
            self.pipe.send_text(key)

    def text(self) -> str:
        """Return everything the terminal received, without escape sequences."""
        return ANSI.sub("", self.recorded.getvalue()).replace("\r", "")

    async def shows(self, needle: str, timeout: float = 30, count: int = 1) -> str:
        """Wait until ``needle`` was written to the terminal ``count`` times."""
        await eventually(lambda: self.text().count(needle) >= count, timeout=timeout, what=repr(needle))
        return self.text()

    async def until(self, condition: Any, timeout: float = 30, what: str = "the condition") -> None:
        """Wait until ``condition()`` holds."""
        await eventually(condition, timeout=timeout, what=what)

    async def idle(self, timeout: float = 30) -> None:
        """Wait until the session runs nothing and asks nothing."""
        screen = self.app.screen
        await eventually(lambda: not screen.busy and not screen.questions, timeout=timeout, what="idle")


async def start_chat(home: Path, work: Path, pipe: PipeInput, **run: Any) -> Keyboard:
    """Start the chat on ``pipe`` with a recorded 100×40 terminal; wait for its session."""
    recorded = Recorder()
    output = Vt100_Output(
        recorded, lambda: Size(rows=40, columns=100), term="xterm-256color", enable_cpr=False
    )
    connector = SpawnConnector(gateway_argv([]), str(work), home / "logs" / "chat-gateway.log")
    app = ChatApp(connector, cwd=str(work), data_dir=home, pt_input=pipe, pt_output=output)
    options = {"resume": None, "continue_here": False, "model": None, **run}
    task = asyncio.create_task(app.run(**options))
    keyboard = Keyboard(app, pipe, recorded, task)
    await keyboard.until(lambda: app.session_open or task.done(), timeout=60, what="the session")
    await keyboard.until(lambda: app.controller.catalog, what="the command catalog")
    return keyboard
