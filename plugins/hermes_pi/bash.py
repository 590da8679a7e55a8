"""pi's ``bash`` command: a shell command the user runs, its output streamed and kept for the
model's next request (docs/reference/pi.md#bash).

The command runs in the session's workspace under ``/bin/bash -c`` (``/bin/sh`` without bash) in a
process group of its own, stdin closed, stderr merged into stdout. Each chunk of output goes out as
``bash_execution_update``; the response carries the result, cut to its last 2,000 lines and
50 KB (the whole output then goes to a temporary file named in ``fullOutputPath``). Unless the
command said ``excludeFromContext``, its output is put before the next prompt the model sees, as
``Ran `command` `` and a fenced block, the way pi adds it.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
KILL_GRACE_S = 1.0


@dataclass(slots=True)
class BashRecord:
    """One finished command, as pi's ``BashExecutionMessage`` keeps it."""

    command: str
    output: str
    exit_code: int | None
    cancelled: bool
    truncated: bool
    full_output_path: str | None
    exclude: bool
    ts: float

    def result(self) -> dict[str, Any]:
        """Return pi's ``BashResult``."""
        data: dict[str, Any] = {
            "output": self.output,
            "exitCode": self.exit_code,
            "cancelled": self.cancelled,
            "truncated": self.truncated,
        }
        if self.full_output_path:
            data["fullOutputPath"] = self.full_output_path
        return data

    def message(self) -> dict[str, Any]:
        """Return pi's ``bashExecution`` message."""
        message: dict[str, Any] = {
            "role": "bashExecution",
            "command": self.command,
            "output": self.output,
            "exitCode": self.exit_code,
            "cancelled": self.cancelled,
            "truncated": self.truncated,
            "timestamp": int(self.ts * 1000),
        }
        if self.full_output_path:
            message["fullOutputPath"] = self.full_output_path
        if self.exclude:
            message["excludeFromContext"] = True
        return message

    def context(self) -> str:
        """Return the text the model sees before the next prompt."""
        return f"Ran `{self.command}`\n```\n{self.output.rstrip()}\n```"


def _shell() -> str:
    return "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


def cut(output: str) -> tuple[str, bool]:
    """Keep the last :data:`MAX_LINES` lines and :data:`MAX_BYTES` bytes; say whether it cut."""
    lines = output.splitlines(keepends=True)
    truncated = False
    if len(lines) > MAX_LINES:
        lines = lines[-MAX_LINES:]
        truncated = True
    text = "".join(lines)
    data = text.encode("utf-8")
    if len(data) > MAX_BYTES:
        text = data[-MAX_BYTES:].decode("utf-8", errors="ignore")
        truncated = True
    return text, truncated


class BashRunner:
    """The commands of one session: those running and those waiting for the next prompt."""

    def __init__(self) -> None:
        self._running: set[asyncio.subprocess.Process] = set()
        self._cancelled: set[asyncio.subprocess.Process] = set()
        #: Finished commands the model has not seen yet, oldest first.
        self.pending: list[BashRecord] = []

    async def run(
        self, command: str, cwd: Path, exclude: bool, on_chunk: Callable[[str], None]
    ) -> BashRecord:
        """Run ``command`` to the end (or until :meth:`abort`) and keep its record."""
        started = time.time()
        proc = await asyncio.create_subprocess_exec(
            _shell(),
            "-c",
            command,
            cwd=str(cwd),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        self._running.add(proc)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        chunks: list[str] = []
        try:
            assert proc.stdout is not None
            while data := await proc.stdout.read(64 * 1024):
                text = decoder.decode(data)
                if text:
                    chunks.append(text)
                    on_chunk(text)
            tail = decoder.decode(b"", final=True)
            if tail:
                chunks.append(tail)
                on_chunk(tail)
            code = await proc.wait()
        finally:
            self._running.discard(proc)
        cancelled = proc in self._cancelled
        self._cancelled.discard(proc)
        full = "".join(chunks)
        output, truncated = cut(full)
        path = await asyncio.to_thread(_save, full) if truncated else None
        record = BashRecord(
            command,
            output,
            None if cancelled else code,
            cancelled,
            truncated,
            path,
            exclude,
            started,
        )
        self.pending.append(record)
        return record

    def abort(self) -> int:
        """Stop every running command (SIGTERM to its group, SIGKILL after a grace); return how many."""
        procs = list(self._running)
        for proc in procs:
            self._cancelled.add(proc)
            _signal(proc, signal.SIGTERM)
            asyncio.get_running_loop().call_later(KILL_GRACE_S, _signal, proc, signal.SIGKILL)
        return len(procs)

    def take_context(self) -> tuple[str, list[BashRecord]]:
        """Return the outputs the next prompt carries and the records taken (forgotten here;
        :meth:`give_back` restores them when that prompt was refused)."""
        taken, self.pending = self.pending, []
        return "\n\n".join(r.context() for r in taken if not r.exclude), taken

    def give_back(self, taken: list[BashRecord]) -> None:
        """Put records taken by :meth:`take_context` back in front of the pending ones."""
        self.pending[:0] = taken


def _signal(proc: asyncio.subprocess.Process, sig: int) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _save(output: str) -> str:
    fd, path = tempfile.mkstemp(prefix="hermes-pi-bash-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(output)
    return path
