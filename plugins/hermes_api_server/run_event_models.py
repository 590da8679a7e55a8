"""The payloads of a run's event stream, ``GET /v1/runs/{run_id}/events``
(docs/reference/api-server.md#run-events).

Every ``data:`` frame is the event head (:class:`RunEventHead`: ``event``, ``run_id``, ``seq``,
``timestamp``) plus the fields of its event, one ``TypedDict`` per event below. The run's
projection (:mod:`hermes_api_server.run_log`), the run manager and its ends build the fields
with these types at no run-time cost; ``hermes schema export`` gives each event a closed JSON
Schema made of the head and its fields (:func:`run_event_schemas`). A child agent's events
(``subagent.*``) carry the fields every transport sends for them, plus what the event's kind
adds; their schema stays open for those.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on 3.12+

CLOSED = ConfigDict(extra="forbid")


class RunEventHead(TypedDict):
    """What every run event starts with; ``seq`` is also the frame's ``id:``."""

    event: str
    run_id: str
    seq: int
    timestamp: float


@with_config(CLOSED)
class RunStartedFields(TypedDict):
    """``run.started``: the session the run works in and the model it asked for and got."""

    session_id: str
    model: str | None
    resolved_model: str | None


@with_config(CLOSED)
class DeltaFields(TypedDict):
    """``message.delta`` and ``reasoning.delta``: more reply (or reasoning) text."""

    delta: str


@with_config(CLOSED)
class ToolProgressFields(TypedDict):
    """``tool.progress``: the tail of a running tool's output."""

    tool_call_id: str
    chunk: str


@with_config(CLOSED)
class ToolStartedFields(TypedDict):
    """``tool.started``: a tool call about to run; ``diff`` when it proposes a file change."""

    tool: str
    tool_call_id: str
    preview: str
    diff: NotRequired[str]


@with_config(CLOSED)
class ToolCompletedFields(TypedDict):
    """``tool.completed``: how long it took, whether it failed; ``diff`` of what it changed."""

    tool: str
    tool_call_id: str
    duration: float
    error: bool
    diff: NotRequired[str]


@with_config(CLOSED)
class ApprovalRequestFields(TypedDict):
    """``approval.request``: a tool call waiting for an answer (``task_id``: asked by a child
    agent, its ``subagent_id``)."""

    request_id: str
    tool: str | None
    tool_call_id: str | None
    command: str
    description: str
    pattern_keys: list[str]
    choices: list[str]
    expires_at: float
    task_id: NotRequired[str]


@with_config(CLOSED)
class ApprovalRespondedFields(TypedDict):
    """``approval.responded``: the answer the request got."""

    request_id: str
    choice: str | None
    resolved: int


@with_config(CLOSED)
class ApprovalExpiredFields(TypedDict):
    """``approval.expired``: the request closed without an answer."""

    request_id: str
    reason: Literal["timeout", "shutdown", "stopped"]


@with_config(CLOSED)
class SteeredFields(TypedDict):
    """``run.steered``: guidance was queued."""

    accepted: Literal[True]


@with_config(CLOSED)
class SteerDeliveredFields(TypedDict):
    """``run.steer_delivered``: the queued guidance reached the model."""

    chars: int


@with_config(CLOSED)
class NoFields(TypedDict):
    """``run.stopping``: a stop was asked for; nothing more to say."""


class SubagentUsage(TypedDict):
    """A child agent's token usage."""

    input: int
    output: int
    total: int


class SubagentFields(TypedDict):
    """``subagent.*``: which child, its place in the delegation and its state, plus the fields
    of the event's kind (``text``, ``tool``, ``summary``, ``duration_s``…)."""

    subagent_id: str
    parent_id: str | None
    depth: int
    goal: str
    task_index: int
    task_count: int
    model: str | None
    status: str
    usage: NotRequired[SubagentUsage]
    delegation_id: NotRequired[str]


@with_config(CLOSED)
class RunUsage(TypedDict):
    """A run's token usage (the Responses names)."""

    input_tokens: int
    output_tokens: int
    total_tokens: int


@with_config(CLOSED)
class RunEndFields(TypedDict, total=False):
    """``run.completed``, ``run.failed``, ``run.cancelled``, ``run.interrupted``: the run's end
    (docs/reference/api-server.md#run-lifecycle); the status resource repeats these fields."""

    output: str
    usage: RunUsage | None
    completed: bool
    partial: bool
    interrupted: bool
    error: str
    error_code: str
    turn_exit_reason: str
    pending_steer: str | None
    warnings: list[str]


@with_config(CLOSED)
class StreamGap(TypedDict):
    """Events between the cursor and the oldest retained one were evicted (no ``id:``)."""

    event: Literal["stream.gap"]
    run_id: str
    timestamp: float
    from_seq: int
    to_seq: int


#: run event name -> the type of its fields
RUN_EVENT_FIELDS: dict[str, Any] = {
    "run.started": RunStartedFields,
    "message.delta": DeltaFields,
    "reasoning.delta": DeltaFields,
    "tool.started": ToolStartedFields,
    "tool.progress": ToolProgressFields,
    "tool.completed": ToolCompletedFields,
    "approval.request": ApprovalRequestFields,
    "approval.responded": ApprovalRespondedFields,
    "approval.expired": ApprovalExpiredFields,
    "run.steered": SteeredFields,
    "run.steer_delivered": SteerDeliveredFields,
    "subagent.spawn_requested": SubagentFields,
    "subagent.start": SubagentFields,
    "subagent.progress": SubagentFields,
    "subagent.thinking": SubagentFields,
    "subagent.tool": SubagentFields,
    "subagent.complete": SubagentFields,
    "run.stopping": NoFields,
    "run.completed": RunEndFields,
    "run.failed": RunEndFields,
    "run.cancelled": RunEndFields,
    "run.interrupted": RunEndFields,
}


def schema_name(event: str) -> str:
    """Return the schema name of one run event: ``message.delta`` → ``RunEventMessageDelta``."""
    return "RunEvent" + "".join(part.capitalize() for part in event.replace("_", ".").split("."))


def run_event_schemas(ref_prefix: str) -> dict[str, Any]:
    """Return one JSON Schema per run event (head and fields in one object), named by
    :func:`schema_name`, plus the types they refer to.

    :param ref_prefix: where the schemas go, e.g. ``#/components/schemas/``.
    """
    from hermes_core import wire_schemas

    own_types: dict[str, Any] = {t.__name__: t for t in RUN_EVENT_FIELDS.values()}
    fields = wire_schemas(own_types, ref_prefix, mode="validation")
    head = wire_schemas({"RunEventHead": RunEventHead}, ref_prefix, mode="validation")["RunEventHead"]
    out = {k: v for k, v in fields.items() if k not in own_types}
    out.update(wire_schemas({"StreamGap": StreamGap}, ref_prefix, mode="validation"))
    for event, type_ in RUN_EVENT_FIELDS.items():
        own = fields[type_.__name__]
        properties = dict(head["properties"])
        properties["event"] = {"const": event, "type": "string"}
        properties["seq"] = {"minimum": 1, "type": "integer"}
        properties.update(own.get("properties", {}))
        schema: dict[str, Any] = {
            "type": "object",
            "title": schema_name(event),
            "description": own.get("description", ""),
            "properties": {k: {x: y for x, y in v.items() if x != "title"} for k, v in properties.items()},
            "required": [*head["required"], *own.get("required", ())],
        }
        if own.get("additionalProperties") is False:
            schema["additionalProperties"] = False
        out[schema_name(event)] = schema
    return dict(sorted(out.items()))
