"""The TUI gateway's typed method results: the ``TypedDict`` s the handlers build their answers as.

Like the event payloads in :mod:`hermes_tui_gateway.wire`, results are plain dicts annotated with
these types (mypy checks every key the handler writes), and ``hermes schema export`` turns the
same types into each method's ``result`` schema (docs/reference/tui-gateway.md for the prose).
A sub-object still described only in the reference is ``dict[str, Any]``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on 3.12+

from hermes_tui_gateway.wire import EventParams, SessionInfoObj


class TranscriptMessage(TypedDict):
    """One row of a transcript (docs/reference/tui-gateway.md#transcript-rows)."""

    role: str
    text: Any
    row_id: int
    timestamp: float
    display_kind: str | None
    reasoning: NotRequired[str]
    #: the reply stopped early: `error` or `interrupted`
    cut_off: NotRequired[str]
    name: NotRequired[str | None]
    context: NotRequired[str]
    active: NotRequired[bool]
    archived_reason: NotRequired[str | None]


class Snapshot(TypedDict):
    """A live session's state (docs/reference/tui-gateway.md#snapshot)."""

    session_id: str
    stored_session_id: str
    session_key: str
    message_count: int
    messages: list[TranscriptMessage]
    info: SessionInfoObj
    running: bool
    status: str
    started_at: float
    #: the open questions, as their ``*.request`` event params
    open_requests: list[EventParams]
    queued: int
    pending_approval: NotRequired[Any]
    pending_clarify: NotRequired[Any]
    messages_omitted: NotRequired[bool]


class ResumeResult(Snapshot):
    """``session.resume``: the snapshot and the id resumed."""

    resumed: str


class BranchResult(Snapshot):
    """``session.branch``: the new session's snapshot, its title and its parent."""

    title: str | None
    parent: str


class SessionListItem(TypedDict):
    """One stored session of ``session.list``."""

    id: str
    title: str | None
    preview: str | None
    started_at: float
    last_active: float
    message_count: int
    source: str | None
    cwd: str | None


class SessionListResult(TypedDict):
    """``session.list``: stored sessions, most recently active first."""

    sessions: list[SessionListItem]


class CloseResult(TypedDict):
    """``session.close``: false when the session was not live."""

    closed: bool


class HistoryResult(TypedDict):
    """``session.history``."""

    count: int
    messages: list[TranscriptMessage]


class TitleResult(TypedDict):
    """``session.title``: the title read (``session_key``) or set (``pending`` until the first turn)."""

    title: str
    session_key: NotRequired[str]
    pending: NotRequired[bool]


class SubmitResult(TypedDict):
    """``prompt.submit``: started, queued behind a running turn, or steered into it."""

    status: Literal["streaming", "queued", "steered"]
    position: NotRequired[int]
    #: after a rewind: the user rows still active
    survivor_user_row_ids: NotRequired[list[int | None]]
    survivor_row_id_map: NotRequired[dict[str, int | None]]


class InterruptResult(TypedDict):
    """``session.interrupt``."""

    status: Literal["interrupted"]
    interrupted: bool
    discarded_queue: list[str]


class SteerResult(TypedDict):
    """``session.steer``: queued for the running turn, or rejected with a reason."""

    status: Literal["queued", "rejected"]
    text: str
    reason: NotRequired[str]


class BackgroundResult(TypedDict):
    """``prompt.background``: the task's id (``background.complete`` names it)."""

    task_id: str


class AnswerResult(TypedDict):
    """``clarify.respond``, ``sudo.respond``, ``secret.respond``."""

    status: Literal["ok", "expired"]


class ApprovalResult(TypedDict):
    """``approval.respond``: how many approvals the choice resolved."""

    resolved: int
    status: NotRequired[Literal["expired"]]
