"""The TUI gateway's connection and session shapes: ``gateway.ready``, ``SessionInfo`` and the
usage object (docs/reference/tui-gateway.md#the-ready-event, #sessioninfo, #usage-object).

``TypedDict`` s like the rest of :mod:`hermes_tui_gateway.wire`, which re-exports them.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, Required

from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on 3.12+


class SchemaStampObj(TypedDict):
    """The version and ``sha256`` of the schema export the server speaks (docs/integrating.md)."""

    version: str
    sha256: str


class Skin(TypedDict):
    """The skin a host may apply (always the default one)."""

    name: str
    colors: dict[str, str]
    branding: dict[str, str]


class ProtocolObj(TypedDict):
    """The protocol's name and version."""

    name: Literal["hermes-tui-gateway"]
    version: int


class Capabilities(TypedDict):
    """What this gateway supports."""

    event_replay: bool
    server_requests: bool
    rewind: bool
    steer: bool
    queue: bool


class ReadyPayload(TypedDict):
    """``gateway.ready``: the first frame on every connection."""

    skin: Skin
    version: str
    protocol: ProtocolObj
    replay_epoch: str
    capabilities: Capabilities
    schema: SchemaStampObj


class UsageObj(TypedDict):
    """The usage object (docs/reference/tui-gateway.md#usage-object)."""

    model: str | None
    input: int
    output: int
    prompt: int
    completion: int
    reasoning: int
    total: int
    calls: int
    estimated: bool
    context_used: NotRequired[int]
    context_max: NotRequired[int]
    context_percent: NotRequired[float]
    cost_usd: NotRequired[float]


class InfoExtra(TypedDict, total=False):
    """The gateway-held fields of ``SessionInfo``."""

    busy_policy: str
    #: tool names by owning plugin
    tools: dict[str, list[str]]
    #: one object per tool server (MCP) the session sees
    mcp_servers: list[dict[str, Any]]
    version: str
    #: the git branch of the session's folder, absent outside a repository
    branch: str


class SessionInfoObj(InfoExtra):
    """``session.info`` and a snapshot's ``info``: the session's state
    (docs/reference/tui-gateway.md#sessioninfo). The fields after ``usage`` are kept, empty, for
    the Ink TUI, which reads them."""

    session_id: Required[str]
    stored_session_id: Required[str]
    title: Required[str | None]
    model: Required[str]
    provider: Required[str]
    reasoning_effort: Required[str | None]
    approval_mode: Required[str]
    yolo: Required[bool]
    busy: Required[bool]
    cwd: Required[str]
    running: Required[bool]
    status: Required[str]
    queued: Required[int]
    usage: Required[UsageObj]
    skills: Required[dict[str, Any]]
    fast: Required[bool]
    service_tier: Required[str]
    personality: Required[str]
    release_date: Required[str]
    update_behind: Required[Any]
    update_command: Required[str]
