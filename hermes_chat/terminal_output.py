"""Where the interactive chat writes: finished text above the running application, into the
terminal's own scrollback (no alternate screen), and the styles the application draws with."""

from __future__ import annotations

import asyncio
from typing import Any

from prompt_toolkit.application import Application
from prompt_toolkit.styles import Style

from hermes_chat import trace

STYLE = Style.from_dict(
    {
        "toolbar": "reverse",
        "toolbar.warn": "reverse fg:ansiyellow",
        "prompt": "bold fg:ansicyan",
        "live": "",
        "live.dim": "fg:ansibrightblack",
        "live.tool": "fg:ansiyellow",
        "question": "bold",
        "question.key": "bold fg:ansicyan",
        "question.hint": "fg:ansibrightblack",
    }
)


class TerminalOutput:
    """Writes finished text above the running application, into the normal scrollback."""

    def __init__(self) -> None:
        self.app: Application[Any] | None = None
        self._pending: list[str] = []
        self._scheduled = False

    def write(self, text: str, *, reply: bool = False) -> None:
        if not text:
            return
        self._pending.append(text)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def refresh(self) -> None:
        if self.app is not None:
            if trace.ON:
                trace.note(f"invalidate pending={self.app.invalidated} running={self.app.is_running}")
            self.app.invalidate()

    def flush(self) -> None:
        """Write what is pending now (above the application when it runs)."""
        self._scheduled = False
        if not self._pending or self.app is None:
            return
        text = "".join(self._pending)
        self._pending.clear()
        if not text.endswith("\n"):
            text += "\n"
        app = self.app
        running = app.is_running and not app.is_done
        if running:
            app.renderer.erase()
        app.output.write_raw(text)
        app.output.flush()
        if running:
            app.invalidate()
