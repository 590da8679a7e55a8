"""The tool protocol: what a tool declares and what it gets while it runs (docs/reference/core.md#tools).

A handler is either a plain function, run in an executor thread, or a coroutine function, run on
the event loop. It receives the parsed arguments and a :class:`ToolContext`, and returns a
:class:`ToolResult` (or a string, taken as a successful result). Raising :class:`ToolError`
gives the model an error result; any other exception is a tool crash, reported as an error
result too (the turn goes on).
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hermes_core.content import ImagePart
    from hermes_core.events import FileChange, TodoItem
    from hermes_core.session.live import Session


class ToolError(Exception):
    """A tool failure the model should see as an error result (not a crash)."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returns to the model; ``file_change`` and ``todos`` feed the events.

    ``images`` go to the model with the text when it sees images (docs/writing-tools.md#image-results);
    otherwise the model reads one line per image saying what was left out.
    """

    text: str
    is_error: bool = False
    file_change: FileChange | None = None
    todos: tuple[TodoItem, ...] | None = None
    images: tuple[ImagePart, ...] = ()


class FileAccess(Protocol):
    """How file tools read and write; local by default, swapped per session (ACP ``fs/*``).

    Methods are called from tool threads and may block.
    """

    def read_text(self, path: Path) -> str:
        """Return the file's text; raise ``ToolError`` for a binary or missing file."""
        ...

    def write_text(self, path: Path, text: str) -> None:
        """Write the file (creating parent directories)."""
        ...


class ToolContext(Protocol):
    """What a running tool may use. Every method is safe to call from the tool's thread."""

    session_id: str
    call_id: str
    session: Session  # the live session calling the tool (a delegating tool opens children of it)
    turn_id: str | None
    answerable: frozenset[str]  # question kinds the running turn's host can answer
    cwd: Path
    file_access: FileAccess
    settings: Mapping[str, Any]  # terminal_timeout_s, output_cap_chars, ...
    cancelled: threading.Event  # set on interrupt / close / shutdown
    #: The W3C ``traceparent`` of this call's span, to pass to what the tool calls (None: no
    #: tracing). See docs/observability.md#propagation.
    traceparent: str | None

    def progress(self, chunk: str) -> None:
        """Report output while running (becomes ``ToolProgress``)."""
        ...

    def resolve(self, path: str) -> Path:
        """Resolve a path against the workspace (``..`` and symlinks resolved, absolute).

        A path outside the workspace raises :class:`ToolError` unless it is one of the call's
        ``path_args`` (or lies below one): those the approval step has already asked about.
        See :func:`hermes_core.resolve_in_workspace`.
        """
        ...

    def ask(self, kind: str, **fields: Any) -> str:
        """Ask the host a ``clarify``, ``sudo`` or ``secret`` question and wait for the answer.

        Returns the empty string when nobody answers (timeout, interrupt, no answerer).
        Blocks the calling thread; from a coroutine handler use :meth:`ask_async`.
        """
        ...

    async def ask_async(self, kind: str, **fields: Any) -> str: ...

    def register_process(self, proc: Any, *, background: bool = False) -> None:
        """Register a subprocess (``subprocess.Popen``, own process group) for kill on cancel.

        The core kills registered foreground processes' groups on interrupt: SIGTERM, then
        SIGKILL after the grace period. Background processes stay until the session closes.
        """
        ...

    def unregister_process(self, proc: Any) -> None: ...

    def store_secret(self, env_var: str, value: str) -> None:
        """Write a secret through the settings store and reload settings (``request_secret``)."""
        ...


ToolHandler = Callable[[dict[str, Any], ToolContext], "ToolResult | str | Awaitable[ToolResult | str]"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the agent may call.

    :param kind: ``read``, ``edit``, ``delete``, ``move``, ``search``, ``execute``, ``think``,
        ``fetch`` or ``other`` (drives approvals and ACP's kind mapping).
    :param path_args: names of arguments that hold file paths (confinement and approval keys).
    :param command_arg: for ``execute`` tools, the argument holding the shell command.
    :param title: a fixed title, or a function of the arguments.
    :param preview: side-effect free; returns the proposed ``FileChange`` for edits. Called on a
        tool thread, like a synchronous handler, and reads through ``ctx.file_access``.
    :param describe: one line (≤ 200 chars) shown before the call runs.
    :param needs: question kinds the tool asks (a tool needing ``clarify`` is hidden when the
        turn cannot answer clarify questions).
    """

    name: str
    description: str
    schema: Mapping[str, Any]
    handler: ToolHandler
    kind: str = "other"
    title: str | Callable[[Mapping[str, Any]], str] | None = None
    toolset: str = "core"
    emoji: str | None = None
    preview: Callable[[Mapping[str, Any], ToolContext], FileChange | None] | None = None
    describe: Callable[[Mapping[str, Any]], str] | None = None
    path_args: tuple[str, ...] = ()
    command_arg: str | None = None
    needs: frozenset[str] = field(default_factory=frozenset)
