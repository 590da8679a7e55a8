"""The TUI gateway's typed results of commands, processes, composer helpers and attachments,
built like :mod:`hermes_tui_gateway.wire_results`'s."""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on 3.12+


class CommandCategory(TypedDict):
    """A category of ``commands.catalog``: its ``[name, summary]`` pairs."""

    name: str
    pairs: list[list[str]]


class CommandCatalog(TypedDict):
    """``commands.catalog``: every command as ``[/name, summary]``, subcommands, aliases."""

    pairs: list[list[str]]
    sub: dict[str, list[str]]
    canon: dict[str, str]
    categories: list[CommandCategory]
    skill_count: int
    warning: str


class CommandResolved(TypedDict):
    """``command.resolve``."""

    canonical: str
    description: str
    category: str


class CommandDirective(TypedDict):
    """``command.dispatch``: what the host does next
    (docs/reference/tui-gateway.md#slash-commands-and-the-cli).

    ``send``: submit ``message`` (show ``display``); ``prefill``: put ``message`` in the input;
    ``alias``: run ``target``; ``exec``: show ``output``. When the command changed the caller's
    session (``/new``, ``/resume``, ``/branch``) the new session's snapshot fields are merged in,
    with ``previous_session_id`` (``/new``, ``/resume``) or ``title`` and ``parent`` (``/branch``).
    """

    type: Literal["send", "prefill", "alias", "exec"]
    message: NotRequired[str]
    display: NotRequired[dict[str, Any]]
    target: NotRequired[str | None]
    output: NotRequired[str]
    previous_session_id: NotRequired[str]


class SlashExecResult(TypedDict):
    """``slash.exec``: an ``exec`` directive without its ``type`` (``output``, and a snapshot's
    fields after ``/new``), else the directive as ``command.dispatch`` answers it."""

    output: NotRequired[str]
    type: NotRequired[Literal["send", "prefill", "alias"]]
    message: NotRequired[str]
    display: NotRequired[dict[str, Any]]
    target: NotRequired[str | None]
    previous_session_id: NotRequired[str]


class CliExecResult(TypedDict):
    """``cli.exec``: the exit code and output (``blocked`` with a ``hint`` for a refused command)."""

    blocked: bool
    code: int | None
    output: str
    hint: NotRequired[str]
    truncated: NotRequired[bool]


class ReloadMcpResult(TypedDict):
    """``reload.mcp``: each tool server's state and tools (``SessionInfo.mcp_servers`` entries)."""

    status: Literal["reloaded"]
    servers: list[dict[str, Any]]


class ReloadEnvResult(TypedDict):
    """``reload.env``: how many settings changed."""

    updated: int


class ProcessStopResult(TypedDict):
    """``process.stop``: how many background processes were ended."""

    killed: int


class PluginRow(TypedDict):
    """One loaded plugin."""

    name: str
    version: str
    description: str
    source: Literal["bundled", "user"]
    status: Literal["enabled", "failed"]


class PluginsList(TypedDict):
    """``plugins.manage`` ``list``."""

    plugins: list[PluginRow]
    user_count: int
    bundled_count: int


class ToolsConfigured(TypedDict):
    """``tools.configure``: the names that changed something, and those that name nothing."""

    changed: list[str]
    unknown: list[str]
    missing_servers: list[str]
    reset: bool


class DropDetected(TypedDict):
    """``input.detect_drop``: ``matched`` false, or the file (an image is attached to the next
    turn); ``text`` is what the host submits instead of the line."""

    matched: bool
    is_image: NotRequired[bool]
    path: NotRequired[str]
    name: NotRequired[str]
    text: NotRequired[str]
    count: NotRequired[int]
    width: NotRequired[int]
    height: NotRequired[int]
    token_estimate: NotRequired[int]


class ShellExecResult(TypedDict):
    """``shell.exec``: the ends of both streams and the exit code."""

    stdout: str
    stderr: str
    code: int | None


class PasteCollapsed(TypedDict):
    """``paste.collapse``: the placeholder to show, the file, its line count."""

    placeholder: str
    path: str
    lines: int


class Attached(TypedDict):
    """``image.attach`` / ``clipboard.paste``: the image kept for the next turn (``attached`` false
    with a ``message`` when the clipboard held none)."""

    attached: bool
    path: NotRequired[str]
    count: NotRequired[int]
    name: NotRequired[str]
    width: NotRequired[int]
    height: NotRequired[int]
    token_estimate: NotRequired[int]
    #: ``image.attach``: the text after the path
    remainder: NotRequired[str]
    text: NotRequired[str]
    message: NotRequired[str]
