"""The TUI gateway's typed params of the methods beyond sessions and prompts: configuration,
completion, live state, subagents and spawn trees, commands, processes, composer helpers and
attachments (the reading rules are :mod:`hermes_tui_gateway.wire_params`'s)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, WithJsonSchema

from hermes_tui_gateway.wire_params import LooseStr, ParamsModel, SessionParams
from hermes_tui_gateway.wire_params import NoParams as NoParams
from hermes_tui_gateway.wire_params import WorkspaceParams as WorkspaceParams
from hermes_tui_gateway.wire_params import parse as parse


# -- configuration and models (docs/reference/tui-gateway.md#configuration-and-models) ------------
class ConfigGetParams(SessionParams):
    """``config.get``: one key (aliases such as ``approvals.mode`` accepted; 4002 when unknown)."""

    key: str


class ConfigSetParams(SessionParams):
    """``config.set``: ``value`` must be present (``yolo`` alone toggles); ``scope`` is ``session``
    or ``global`` (4002 otherwise)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("value",)

    key: str
    value: Annotated[Any, WithJsonSchema({})] = None
    scope: Annotated[Any, WithJsonSchema({"enum": ["session", "global"], "type": "string"})] = None


class ModelOptionsParams(SessionParams):
    """``model.options``: ``refresh`` probes the providers again (JSON true or ``1``/``true``/…)."""

    refresh: Annotated[
        Any, WithJsonSchema({"anyOf": [{"type": "boolean"}, {"type": "string"}, {"type": "integer"}]})
    ] = None


# -- completion (docs/reference/tui-gateway.md#composer-helpers) -----------------------------------------
class CompleteSlashParams(ParamsModel):
    """``complete.slash``: the input so far (from its ``/``)."""

    text: str = ""


class CompletePathParams(WorkspaceParams):
    """``complete.path``: the word to complete, relative to ``cwd`` (else the session's folder)."""

    word: str = ""


# -- live-session state (docs/reference/tui-gateway.md#session-lifecycle) --------------------------
class ActiveListParams(ParamsModel):
    """``session.active_list``: ``current_session_id`` marks the caller's session."""

    current_session_id: str | None = None


class EventsSinceParams(SessionParams):
    """``session.events.since``: replay what came after ``last_seen``."""

    EXPECTED: ClassVar[dict[str, str]] = {"last_seen": "integer >= 0"}

    last_seen: Annotated[int, Field(ge=0)]


class ResizeParams(SessionParams):
    """``terminal.resize``: the terminal's width (clamped to 20…1000)."""

    cols: int


class CompressParams(SessionParams):
    """``session.compress``: ``focus_topic`` (at most 1000 characters, 4002 beyond) steers the summary."""

    focus_topic: str | None = None


class DeleteParams(SessionParams):
    """``session.delete``: always refused (4006 without an id, then 4023, 4007, 5036)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("session_id",)


# -- subagents and spawn trees (docs/reference/tui-gateway.md#subagents) -------------------------
#: ``subagent_id``: a missing, empty or non-string id is 4000 ``subagent_id required``.
SubagentId = Annotated[Any, WithJsonSchema({"type": "string", "minLength": 1})]


class DelegationPauseParams(SessionParams):
    """``delegation.pause``: without ``session_id``, every session of this gateway."""

    paused: bool = True


class SubagentListParams(SessionParams):
    """``subagent.list``."""

    active_only: bool = False


class SubagentParams(SessionParams):
    """``subagent.interrupt``: one child (of ``session_id``'s tree when given)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("subagent_id",)

    subagent_id: SubagentId = None


class SubagentSteerParams(SubagentParams):
    """``subagent.steer``: guidance for the child's next tool boundary (4002 when empty)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("subagent_id", "text")

    text: LooseStr = None


class SubagentTailParams(SubagentParams):
    """``subagent.tail``: the last ``chars`` characters (1…16384, default 4000)."""

    chars: int | None = None


class SpawnTreeSaveParams(SessionParams):
    """``spawn_tree.save``: a non-empty list of subagent objects (4000 when missing or empty)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("subagents",)
    EXPECTED: ClassVar[dict[str, str]] = {"subagents": "list of objects"}

    subagents: Annotated[
        Any, WithJsonSchema({"type": "array", "items": {"type": "object"}, "minItems": 1})
    ] = None
    label: str | None = None
    started_at: Annotated[Any, WithJsonSchema({"type": "number"})] = None
    finished_at: Annotated[Any, WithJsonSchema({"type": "number"})] = None


class SpawnTreeListParams(SessionParams):
    """``spawn_tree.list``: newest first; ``cross_session`` lists every session's trees."""

    limit: int | None = None
    cross_session: bool = False


class SpawnTreeLoadParams(ParamsModel):
    """``spawn_tree.load``: a path ``spawn_tree.list`` gave (4000 when missing)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("path",)

    path: Annotated[Any, WithJsonSchema({"type": "string", "minLength": 1})] = None


# -- slash commands (docs/reference/tui-gateway.md#slash-commands-and-the-cli) ---------------------
class CommandResolveParams(ParamsModel):
    """``command.resolve``: a command name or alias (with or without ``/``)."""

    name: str


class CommandDispatchParams(SessionParams):
    """``command.dispatch``: ``command`` (``/name args``), else ``name`` and ``arg``; a missing or
    non-string ``name`` then is -32602 for ``command``."""

    command: str | None = None
    name: LooseStr = None
    arg: str | None = None


class SlashExecParams(SessionParams):
    """``slash.exec``: the compatibility alias of ``command.dispatch`` (``command`` only)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("command",)

    command: LooseStr = None


# -- environment and processes (docs/reference/tui-gateway.md#environment-and-processes) -----------
class CliExecParams(ParamsModel):
    """``cli.exec``: a ``hermes`` command line (4003 unless a list of strings), ``timeout`` seconds."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("argv",)
    EXPECTED: ClassVar[dict[str, str]] = {"timeout": "number > 0"}

    argv: Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "string"}})] = None
    timeout: Annotated[float, Field(gt=0)] = 240


class PluginsManageParams(ParamsModel):
    """``plugins.manage``: ``list``; ``toggle`` (with ``name``) is refused, 4017 for another action."""

    action: Annotated[Any, WithJsonSchema({"enum": ["list", "toggle"], "type": "string"})] = None
    name: LooseStr = None


class ToolsConfigureParams(SessionParams):
    """``tools.configure``: ``enable`` or ``disable`` (4017 otherwise) the named tools or groups."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("action", "names")

    action: Annotated[Any, WithJsonSchema({"enum": ["enable", "disable"], "type": "string"})] = None
    #: a list of strings (-32602 otherwise), after ``action`` is checked
    names: Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "string"}})] = None


# -- composer helpers (docs/reference/tui-gateway.md#composer-helpers) -----------------------------
class DetectDropParams(SessionParams):
    """``input.detect_drop``: a submitted line that may be a dragged-in file."""

    text: str = ""


class ShellExecParams(WorkspaceParams):
    """``shell.exec``: a ``!command`` line (4004 when empty, 4005 when guarded)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("command",)

    command: str | None = None


class PasteCollapseParams(ParamsModel):
    """``paste.collapse``: a long paste to keep in a file (4004 when empty)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("text",)

    text: str | None = None


# -- attachments (docs/reference/tui-gateway.md#terminal-and-attachments) --------------------------
class ImageAttachParams(SessionParams):
    """``image.attach``: an image file (quoted when it has spaces), then any text (4015 when empty)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("path",)

    path: str | None = None
