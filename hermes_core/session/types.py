"""Small result records of the session API (docs/reference/core.md#core-api)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_core.events import Usage
from hermes_core.storage import Row

Status = Literal["idle", "starting", "streaming", "working", "waiting"]


@dataclass(frozen=True, slots=True)
class BranchSeed:
    """What a branch starts from (``Session.branch``): the source session's settings, an
    explicit title, and the rows to copy into it. ``Sessions.open(branch=...)`` creates the new
    session with these and stores it at once, rows copied with their tool calls relinked."""

    model: str | None
    provider: str | None
    title: str
    reasoning_effort: str | None
    system_overlay: str | None
    rows: tuple[Row, ...] = ()


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A snapshot of a live session."""

    session_id: str
    source: str
    model: str | None
    provider: str | None
    model_source: str
    cwd: str
    profile: str
    title: str | None
    status: Status
    busy: bool
    running: bool
    queued: int
    usage: Usage
    reasoning_effort: str | None
    parent_session_id: str | None
    channel_key: str | None
    persisted: bool
    created_at: float
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DiscardedItem:
    """A queued prompt that was dropped before it ran."""

    item_id: str
    owner: str
    text: str


@dataclass(frozen=True, slots=True)
class Interrupted:
    """What ``Session.interrupt`` did."""

    was_running: bool
    discarded: tuple[DiscardedItem, ...] = ()


@dataclass(frozen=True, slots=True)
class ModelSwitch:
    """The result of a model switch."""

    ref: str
    provider: str
    model: str
    scope: Literal["session", "global", "once"]
    previous: str | None
    marker_row_id: int | None = None


@dataclass(frozen=True, slots=True)
class TitleResult:
    """A session's title, and whether it waits for the session's first stored row."""

    title: str
    pending: bool


@dataclass(frozen=True, slots=True)
class RewindResult:
    """What rewinding a session's history archived and which user rows survived."""

    archived: int
    survivor_user_row_ids: list[int | None]
    target_ordinal: int


@dataclass(frozen=True, slots=True)
class ReconcileResult:
    """How many rows reconciling a session's history kept, archived and appended."""

    kept: int
    archived: int
    appended: int


@dataclass(frozen=True, slots=True)
class CompressResult:
    """What compressing a session's history archived and the summary that replaced it."""

    summary_row_id: int | None
    archived: int
    messages_before: int
    messages_after: int
    summary: str


@dataclass(frozen=True, slots=True)
class StoredSession:
    """A stored session read without taking its lease."""

    record: Any
    rows: list[Any]
