"""Pydantic models of the run and browser-control response bodies and event payloads, for the
OpenAPI document (docs/reference/api-server.md#get-openapijson); the other routes' are in
:mod:`hermes_api_server.response_models`, whose conventions these follow."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from hermes_api_server.response_models import Open

RunStatusName = Literal[
    "queued", "running", "waiting_for_approval", "stopping", "completed", "failed", "cancelled", "interrupted"
]
Choice = Literal["once", "session", "always", "deny"]


class RunAccepted(Open):
    """``POST /v1/runs`` (202)."""

    run_id: Annotated[str, Field(pattern=r"^run_")]
    status: str = Field(description='"started" for a new run; the current status for a replay.')
    replayed: bool
    session_id: str


class RunStatus(Open):
    """``GET /v1/runs/{run_id}`` (docs/reference/api-server.md#run-status); terminal runs add their terminal
    event's fields."""

    object: Literal["hermes.run"]
    run_id: str
    status: RunStatusName
    created_at: float
    updated_at: float
    session_id: str
    model: str | None = None
    resolved_model: str | None = None
    last_event: str | None = None
    last_seq: int
    metadata: dict[str, str] = Field(default_factory=dict)
    output: str | None = None
    usage: dict[str, Any] | None = None
    completed: bool | None = None
    pending_steer: str | None = None
    approval: dict[str, Any] | None = None


class RunStopped(Open):
    """``POST /v1/runs/{run_id}/stop``: ``{run_id, status}``, or the status object of a terminal run."""

    run_id: str
    status: RunStatusName


class SteerAccepted(Open):
    """``POST /v1/runs/{run_id}/steer``: queued, not yet consumed."""

    object: Literal["hermes.run.steer"]
    run_id: str
    accepted: Literal[True]


class ApprovalResolved(Open):
    """``POST /v1/runs/{run_id}/approval``."""

    object: Literal["hermes.run.approval_response"]
    run_id: str
    choice: Choice
    request_id: str | None = None
    resolved: int


class ControllerScope(Open):
    """What a browser-control ticket is bound to."""

    principal_id: str
    session_id: str
    controller_id: str
    browser_profile_id: str
    transport_family: Literal["local-api", "remote-api"]
    capabilities: list[str]


class BrowserRegistered(Open):
    """``POST /v1/browser-control/register`` (201)."""

    protocol_version: Literal[1]
    ticket: str
    ticket_expires_at: int
    ticket_expires_in_seconds: int
    ws_path: str
    scope: ControllerScope


RUN_MODELS: tuple[type[BaseModel], ...] = (
    RunAccepted,
    RunStatus,
    RunStopped,
    SteerAccepted,
    ApprovalResolved,
    BrowserRegistered,
)
