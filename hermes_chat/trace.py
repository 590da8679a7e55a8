"""An opt-in log of what the chat did and when, to diagnose start-up and drawing problems.

Set ``HERMES_CHAT_FRAME_LOG=PATH`` and the chat appends one line per JSON-RPC frame it sends
or receives, per connection state change and per screen render to ``PATH``, each with the
milliseconds since the process started. It never writes to the terminal. Frames are logged
by method, id and event type only — never their parameters or results, which can hold
prompts, replies and secrets.
"""

from __future__ import annotations

import os
import time
from typing import IO, Any

ENV = "HERMES_CHAT_FRAME_LOG"
ON = bool(os.environ.get(ENV, "").strip())
"""Whether the log is on (read once, at import): callers test it before building a line."""
_T0 = time.monotonic()
_file: IO[str] | None = None
_opened = False


def _sink() -> IO[str] | None:
    global _file, _opened
    if ON and not _opened:
        _opened = True
        try:
            # Line-buffered and open for the process's life: a line is on disk when written.
            _file = open(os.environ[ENV].strip(), "a", encoding="utf-8", buffering=1)
        except OSError:
            _file = None
    return _file


def enabled() -> bool:
    """Say whether the log is on and its file could be opened."""
    return _sink() is not None


def note(what: str) -> None:
    """Append one line (when the log is on)."""
    sink = _sink() if ON else None
    if sink is not None:
        try:
            sink.write(f"{(time.monotonic() - _T0) * 1000:9.1f} {what}\n")
        except (OSError, ValueError):
            pass


def frame(direction: str, message: dict[str, Any]) -> None:
    """Log a frame by its shape: ``>`` sent, ``<`` received."""
    if not ON or _sink() is None:
        return
    if message.get("method") == "event":
        raw = message.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        what = f"event {params.get('type')} seq={params.get('seq')}"
    elif "method" in message:
        what = f"request {message.get('method')} id={message.get('id')}"
    else:
        what = f"{'error' if 'error' in message else 'result'} id={message.get('id')}"
    note(f"{direction} {what}")
