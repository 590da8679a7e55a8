"""The TUI gateway's wire records: the typed shapes the encoders build, the event and error catalogs.

The payloads are ``TypedDict`` s: the encoders in :mod:`encode`, :mod:`projection` and
:mod:`gateway` build plain dicts annotated with these types (mypy checks every key), so the hot
path pays nothing, and ``hermes schema export`` turns the same types into JSON Schema
(:mod:`hermes_tui_gateway.schema_doc`). ``EVENTS`` names every event the gateway sends and
``ERROR_CODES`` every per-method error code; ``tests/schema/test_tui_catalogs.py`` fails when the
code sends one that is missing here (docs/reference/tui-gateway.md#event-catalog, #error-codes).
The connection and session shapes (``gateway.ready``, ``SessionInfo``, usage) live in
:mod:`hermes_tui_gateway.wire_session` and are re-exported here.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on 3.12+

from hermes_tui_gateway.wire_session import (
    Capabilities,
    InfoExtra,
    ProtocolObj,
    ReadyPayload,
    SchemaStampObj,
    SessionInfoObj,
    Skin,
    UsageObj,
)


class MessageStart(TypedDict):
    """``message.start``: a turn began (``user_row_id`` once its prompt is stored; ``queued`` when
    it waited behind another turn)."""

    user_row_id: NotRequired[int]
    queued: NotRequired[bool]


class TextDelta(TypedDict):
    """``message.delta`` / ``reasoning.delta``: text since the last delta."""

    text: str


class TurnError(TypedDict):
    """Why a turn ended in ``error``."""

    code: str
    message: str
    retryable: bool
    layer: str | None


class PersistedTurn(TypedDict):
    """The stored rows of a finished turn."""

    user_row_id: int | None
    assistant_row_id: int | None


class MessageComplete(TypedDict):
    """``message.complete``: the turn's final text and outcome."""

    text: str
    status: Literal["complete", "error", "interrupted"]
    usage: UsageObj
    turn_usage: UsageObj
    reasoning: NotRequired[str]
    pending_steer: NotRequired[str]
    warning: NotRequired[str]
    error: NotRequired[TurnError]
    partial: NotRequired[bool]
    persisted_turn: NotRequired[PersistedTurn]
    #: with ``status: "interrupted"``: ``interrupted_by_user`` or ``interrupted_by_system`` (a turn
    #: cut off by the end of its process, closed when the session was opened again)
    reason: NotRequired[str]
    #: with ``status: "interrupted"``: what happened, when the core says (redacted)
    message: NotRequired[str]


class ToolStart(TypedDict):
    """``tool.start``."""

    tool_id: str
    name: str
    context: str
    args: Any
    #: with ``verbose`` display: the arguments as readable text
    args_text: NotRequired[str]


class ToolProgressPayload(TypedDict):
    """``tool.progress``: the latest output of a running tool (redacted)."""

    tool_id: str
    name: str
    preview: str


class ToolComplete(TypedDict):
    """``tool.complete``."""

    tool_id: str
    name: str
    args: Any
    duration_s: float
    result: str
    error: NotRequired[bool]
    summary: NotRequired[str]
    inline_diff: NotRequired[str]
    todos: NotRequired[list[dict[str, Any]]]
    #: with ``verbose`` display: the whole result as text
    result_text: NotRequired[str]


class QuestionExpire(TypedDict):
    """``<kind>.expire``: a question ended without an answer."""

    request_id: str
    reason: Literal["timeout", "interrupted", "closed"]


class ApprovalRequestPayload(TypedDict):
    """``approval.request``: a tool call waits for the user's choice."""

    request_id: str
    command: str
    description: str
    choices: list[str]
    tool_name: str | None
    pattern_keys: list[str]
    allow_session: bool
    allow_permanent: bool
    timeout_s: float
    pattern_key: NotRequired[str]
    #: the child agent (``subagent_id``) that asked
    task_id: NotRequired[str]


class ClarifyRequestPayload(TypedDict):
    """``clarify.request``: the agent asks the user a question (``choices``: null for free text)."""

    request_id: str
    question: str
    choices: list[str] | None
    timeout_s: float
    task_id: NotRequired[str]


class SudoRequestPayload(TypedDict):
    """``sudo.request``: a command needs the user's password."""

    request_id: str
    timeout_s: float
    command: NotRequired[str]
    task_id: NotRequired[str]


class SecretRequestPayload(TypedDict):
    """``secret.request``: a tool needs a secret value (stored under ``env_var``)."""

    request_id: str
    prompt: str
    env_var: str | None
    timeout_s: float
    metadata: NotRequired[dict[str, Any]]
    task_id: NotRequired[str]


QuestionRequestPayload = (
    ApprovalRequestPayload | ClarifyRequestPayload | SudoRequestPayload | SecretRequestPayload
)


class StatusUpdate(TypedDict):
    """``status.update``."""

    kind: str
    text: str


class SessionTitle(TypedDict):
    """``session.title``."""

    session_id: str
    title: str


class SessionUsage(TypedDict):
    """``session.usage``."""

    usage: UsageObj


class ErrorEvent(TypedDict):
    """``error``: a failure outside a turn."""

    message: str
    code: str


class BackgroundComplete(TypedDict):
    """``background.complete``."""

    task_id: str
    text: str
    status: str


class SessionReclaimed(TypedDict):
    """``session.reclaimed`` (global)."""

    session_id: str
    reason: Literal["orphan"]


class EventParams(TypedDict):
    """The ``params`` of an ``event`` notification (docs/reference/tui-gateway.md#event-envelope)."""

    type: str
    session_id: str
    seq: NotRequired[int]
    payload: NotRequired[dict[str, Any]]


class SessionGap(TypedDict):
    """``session.gap``: numbers of the session's event log a replay cannot give
    (docs/reference/tui-gateway.md#sequence-numbers-and-replay); ``seq`` is ``last_seq``."""

    first_seq: int
    last_seq: int
    reason: Literal["retention", "lost", "unreadable"]


#: Every event the gateway sends → its payload type (``None``: not typed yet, any object).
EVENTS: dict[str, Any] = {
    "gateway.ready": ReadyPayload,
    "message.start": MessageStart,
    "message.delta": TextDelta,
    "reasoning.delta": TextDelta,
    "message.complete": MessageComplete,
    "tool.start": ToolStart,
    "tool.progress": ToolProgressPayload,
    "tool.complete": ToolComplete,
    "approval.request": ApprovalRequestPayload,
    "clarify.request": ClarifyRequestPayload,
    "sudo.request": SudoRequestPayload,
    "secret.request": SecretRequestPayload,
    "approval.expire": QuestionExpire,
    "clarify.expire": QuestionExpire,
    "sudo.expire": QuestionExpire,
    "secret.expire": QuestionExpire,
    "session.info": SessionInfoObj,
    "session.title": SessionTitle,
    "session.usage": SessionUsage,
    "status.update": StatusUpdate,
    "error": ErrorEvent,
    "background.complete": BackgroundComplete,
    "subagent.spawn_requested": None,
    "subagent.start": None,
    "subagent.progress": None,
    "subagent.thinking": None,
    "subagent.tool": None,
    "subagent.complete": None,
    "session.reclaimed": SessionReclaimed,
    "session.gap": SessionGap,
}

#: JSON-RPC's own codes and the gateway's per-method codes (docs/reference/tui-gateway.md#error-codes).
ERROR_CODES: dict[int, str] = {
    -32700: "parse error",
    -32603: "internal error (data.error_id)",
    -32602: "invalid params (data.param, data.expected)",
    -32601: "unknown method",
    -32600: "invalid request",
    4000: "required param missing",
    4001: "session not live (data.session_id, data.resumable)",
    4002: "invalid value, unknown config key or model, a choice not offered",
    4003: "cli.exec argv is not a list of strings",
    4004: "malformed rewind integer, command usage error, unknown subagent",
    4005: "shell.exec command matches a guarded pattern (data.patterns)",
    4006: "session.resume without an id",
    4007: "session not found",
    4008: "nothing to branch",
    4009: "busy, in use by another process, or no pending question with that id",
    4011: "unknown command (command.resolve)",
    4012: "text required",
    4013: "unknown voice action (voice is off here)",
    4014: "voice mode is off; a required hash missing",
    4015: "path required",
    4016: "file missing or unsupported",
    4017: "invalid cwd",
    4018: "rewind target not found, unknown command, attachment too large",
    4019: "unknown action; plugins.toggle without a name",
    4021: "title required",
    4022: "title invalid",
    4023: "session.delete of a session live in this gateway",
    4028: "the rewind would empty the transcript",
    4029: "rewind fields without confirm_truncate",
    4030: "ordinal or message id disagrees with the row id; path outside its folder",
    4031: "the connection's key lacks the method's scope (data.method, data.required_scope)",
    4032: "the method is not in the scope table (data.method); refused for every key",
    4033: "a model call the method needs would pass a budget limit (data.code: budget_exceeded)",
    5000: "resume or spawn-tree I/O failed",
    5001: "config write failed",
    5002: "shell.exec timed out",
    5003: "shell.exec could not start",
    5005: "compress (the model call) failed",
    5006: "session.list failed",
    5007: "title storage failed",
    5008: "rewind storage or branch failed",
    5010: "process.stop failed",
    5011: "session.save could not write",
    5015: "reload failed",
    5016: "cli.exec timed out",
    5017: "cli.exec could not start",
    5024: "skills are not part of Hermes",
    5026: "plugins.manage toggle refused: plugins are chosen at start",
    5027: "clipboard or image I/O failed",
    5029: "browser control is not part of Hermes",
    5030: "command handler failed",
    5031: "pets are not part of Hermes",
    5033: "model.options failed",
    5036: "session.delete: stored sessions are kept",
}


__all__ = [
    "ERROR_CODES",
    "EVENTS",
    "Capabilities",
    "EventParams",
    "InfoExtra",
    "MessageStart",
    "ProtocolObj",
    "ReadyPayload",
    "SchemaStampObj",
    "SessionInfoObj",
    "Skin",
    "ToolProgressPayload",
    "UsageObj",
]
