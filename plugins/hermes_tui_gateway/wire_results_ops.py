"""The TUI gateway's typed results of configuration, completion, live state, history, subagents
and spawn trees, built like :mod:`hermes_tui_gateway.wire_results`'s."""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on 3.12+

from hermes_tui_gateway.wire import EventParams, SessionInfoObj, UsageObj
from hermes_tui_gateway.wire_results import TranscriptMessage


class ConfigValue(TypedDict, total=False):
    """``config.get`` and ``config.set``: the fields a key answers with
    (docs/reference/tui-gateway.md#configuration-and-models); ``value`` for most keys."""

    key: str
    value: Any
    model: str | None
    provider: str | None
    providers: list[str]
    scope: str
    warning: str | None
    display: str
    cwd: str
    branch: str | None
    #: ``full``: the configuration with secrets masked
    config: dict[str, Any]
    mtime: float | None


class SetupStatus(TypedDict):
    """``setup.status``: whether a usable provider is configured."""

    provider_configured: bool


class ModelOptions(TypedDict):
    """``model.options``: the core's model catalog (the payload of ``GET /api/model/options``),
    each provider with ``warning`` when its probe failed."""

    model: str | None
    provider: str | None
    refreshed: bool
    #: one row per provider: ``slug``, ``name``, ``models``, ``is_current``, … (the reference)
    providers: list[dict[str, Any]]
    #: the price tables that priced any model
    pricing_sources: NotRequired[list[str]]


class CompletionItem(TypedDict):
    """One completion: the text to put in, what to show, a note (``dir`` for a folder)."""

    text: str
    display: str
    meta: str


class CompletionResult(TypedDict):
    """``complete.slash`` / ``complete.path``: replace the input from ``replace_from`` on."""

    items: list[CompletionItem]
    replace_from: NotRequired[int]


class ActiveSession(TypedDict):
    """One session live in this process (``session.active_list``)."""

    id: str
    session_key: str
    current: bool
    title: str | None
    preview: str
    model: str
    message_count: int
    started_at: float
    last_active: float
    status: str


class ActiveListResult(TypedDict):
    """``session.active_list``: oldest first."""

    sessions: list[ActiveSession]


class OpenQuestion(TypedDict):
    """A question waiting for an answer: its kind and id."""

    type: str
    request_id: str


class StatusResult(TypedDict):
    """``session.status``: display text (``output``) plus the state's fields."""

    output: str
    session_id: str
    title: str | None
    model: str | None
    provider: str | None
    status: str
    running: bool
    queued: int
    message_count: int
    usage: UsageObj
    started_at: float
    last_active: float
    cwd: str
    open_requests: list[OpenQuestion]
    pending_steer: NotRequired[str]


class EventsSinceResult(TypedDict):
    """``session.events.since``: the replayed events (``truncated`` when the ring lost some)."""

    events: list[EventParams]
    latest_seq: int
    count: int
    truncated: bool
    epoch: str
    open_requests: list[EventParams]


class ResizeResult(TypedDict):
    """``terminal.resize``: the width kept."""

    cols: int


class PingResult(TypedDict):
    """``gateway.ping``."""

    ok: bool
    ts: float


class MostRecentResult(TypedDict):
    """``session.most_recent``: the stored session active last (``session_id: null`` when none)."""

    session_id: str | None
    title: NotRequired[str]
    started_at: NotRequired[float]
    source: NotRequired[str | None]


class UndoResult(TypedDict):
    """``session.undo``: how many rows were archived (0: nothing to undo)."""

    removed: int


class SaveResult(TypedDict):
    """``session.save``: the JSON file written."""

    file: str


class NeverAnswered(TypedDict):
    """A method that always answers with an error (``session.delete``: stored sessions are kept)."""


class CompressSummary(TypedDict):
    """What ``session.compress`` did, in words."""

    headline: str
    token_line: str
    noop: bool
    row_id: int | None
    text: str


class CompressResult(TypedDict):
    """``session.compress``: before/after figures, the new usage, info and transcript."""

    status: Literal["noop", "compressed"]
    removed: int
    before_messages: int
    after_messages: int
    before_tokens: int
    after_tokens: int
    summary: CompressSummary
    usage: UsageObj
    info: SessionInfoObj
    messages: list[TranscriptMessage]


class DelegationStatus(TypedDict):
    """``delegation.status``: running children (each a subagent object), pause, the limits."""

    #: subagent objects (docs/reference/tui-gateway.md#subagents)
    active: list[dict[str, Any]]
    paused: bool
    max_concurrent_children: int
    max_spawn_depth: int
    max_background_children: int
    max_child_tool_rounds: int


class DelegationPauseResult(TypedDict):
    """``delegation.pause``: whose children are paused (``null``: every session here)."""

    session_id: str | None
    paused: bool


class SubagentListResult(TypedDict):
    """``subagent.list``: the tree, oldest first."""

    subagents: list[dict[str, Any]]


class SubagentInterruptResult(TypedDict):
    """``subagent.interrupt``: ``found`` false when no such running child."""

    found: bool
    subagent_id: str


class SubagentSteerResult(TypedDict):
    """``subagent.steer``: queued, or rejected with a reason."""

    status: str
    subagent_id: str
    text: str
    reason: NotRequired[str]


class SubagentTailResult(TypedDict):
    """``subagent.tail``: what the child wrote last, with its state."""

    subagent_id: str
    status: str
    text: str
    summary: str
    error: str | None


class SpawnTreeSaved(TypedDict):
    """``spawn_tree.save``: where the tree went."""

    path: str
    session_id: str


class SpawnTreeEntry(TypedDict):
    """One stored tree of ``spawn_tree.list``."""

    path: str
    session_id: str
    #: as the saver sent them
    started_at: Any
    finished_at: Any
    label: str | None
    count: int | None


class SpawnTreeList(TypedDict):
    """``spawn_tree.list``."""

    entries: list[SpawnTreeEntry]


class SpawnTree(TypedDict):
    """``spawn_tree.load``: the stored tree as saved."""

    subagents: list[dict[str, Any]]
    session_id: NotRequired[str]
    started_at: NotRequired[Any]
    finished_at: NotRequired[Any]
    label: NotRequired[str | None]
