"""The TUI gateway's typed params of the session methods beyond ``session.create``.

Made on first use: :mod:`hermes_tui_gateway.wire_params` imports this module when a handler first
names one of its models (the reading rules are that module's)."""

from __future__ import annotations

from typing import ClassVar

from hermes_tui_gateway.wire_params import ParamsModel, SessionParams


class NoParams(ParamsModel):
    """A method that reads no params (``setup.status``)."""


class WorkspaceParams(SessionParams):
    """A folder to work in: ``cwd``, else the session's folder."""

    EXPECTED: ClassVar[dict[str, str]] = {"cwd": "a folder path (no NUL character)"}

    cwd: str | None = None


class SessionResumeParams(ParamsModel):
    """``session.resume``: a live or stored session id (4006 when missing)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("session_id",)

    session_id: str = ""
    cols: int | None = None
    omit_messages: bool = False
    close_on_disconnect: bool = False


class SessionListParams(ParamsModel):
    """``session.list``."""

    limit: int = 200
    title: str | None = None
    cwd: str | None = None


class SnapshotParams(SessionParams):
    """``session.activate``."""

    omit_messages: bool = False


class SessionHistoryParams(SessionParams):
    """``session.history``."""

    include_archived: bool = False


class SessionBranchParams(SessionParams):
    """``session.branch``: ``count`` and ``up_to_row_id`` are exclusive."""

    name: str | None = None
    count: int | None = None
    up_to_row_id: int | None = None


class SessionTitleParams(SessionParams):
    """``session.title``: reads without ``title``, sets with it."""

    title: str | None = None
