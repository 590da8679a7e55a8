"""A test ToolContext and helpers for calling the core tools the way the kernel does."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_core import FileAccess, ToolResult, ToolSpec
from hermes_tools.fileaccess import LocalFileAccess
from hermes_tools.plugin import hermes_tools


class FakeToolContext:
    """A ToolContext that records progress, questions and processes, with scripted answers."""

    def __init__(
        self,
        cwd: Path,
        *,
        answers: list[str] | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        """Create a context rooted at ``cwd``.

        :param cwd: the workspace; relative paths resolve against it.
        :param answers: answers handed to successive ``ask`` calls (then the empty answer).
        :param settings: extra settings over small test defaults.
        """
        self.session_id = "s_test"
        self.call_id = "tc_1_0"
        self.cwd = cwd
        self.file_access: FileAccess = LocalFileAccess()
        self.settings: Mapping[str, Any] = {
            "output_cap_chars": 50_000,
            "terminal_timeout_s": 20.0,
            **(settings or {}),
        }
        self.cancelled = threading.Event()
        self.chunks: list[tuple[float, str]] = []
        self.questions: list[tuple[str, dict[str, Any]]] = []
        self.answers = list(answers or [])
        self.registered: list[tuple[Any, bool]] = []
        self.unregistered: list[Any] = []

    def progress(self, chunk: str) -> None:
        """Record a chunk with the time it arrived."""
        self.chunks.append((time.monotonic(), chunk))

    def resolve(self, path: str) -> Path:
        """Resolve ``path`` against the workspace."""
        return (self.cwd / path).resolve()

    def ask(self, kind: str, **fields: Any) -> str:
        """Record the question and return the next scripted answer."""
        self.questions.append((kind, fields))
        return self.answers.pop(0) if self.answers else ""

    async def ask_async(self, kind: str, **fields: Any) -> str:
        """Record the question and return the next scripted answer."""
        return self.ask(kind, **fields)

    def register_process(self, proc: Any, *, background: bool = False) -> None:
        """Record a registered process."""
        self.registered.append((proc, background))

    def unregister_process(self, proc: Any) -> None:
        """Record an unregistered process."""
        self.unregistered.append(proc)

    def store_secret(self, env_var: str, value: str) -> None:
        """Refuse: the core tools never store secrets."""
        raise AssertionError("core tools must not store secrets")

    @property
    def progress_text(self) -> str:
        """Return every progress chunk joined."""
        return "".join(chunk for _, chunk in self.chunks)


def load_specs() -> dict[str, ToolSpec]:
    """Return the plugin's tools by name, loaded through its hook implementation."""
    return {spec.name: spec for spec in hermes_tools()}


def call(spec: ToolSpec, args: dict[str, Any], ctx: FakeToolContext) -> ToolResult:
    """Call a tool's handler as the kernel's executor thread would and normalise the result."""
    result = spec.handler(args, ctx)
    assert isinstance(result, ToolResult | str)
    return ToolResult(text=result) if isinstance(result, str) else result


def process_alive(pid: int) -> bool:
    """Tell whether ``pid`` is a running process (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
