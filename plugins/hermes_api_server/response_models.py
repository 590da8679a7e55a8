"""Pydantic models of the response bodies and stream payloads, the OpenAPI response schemas
(docs/reference/api-server.md#get-openapijson); those of runs and browser control are in
:mod:`hermes_api_server.response_models_runs`.

They describe what the handlers write (docs/reference/api-server.md); nothing validates outgoing bodies with
them at run time. Every model allows extra properties: the documented fields are a floor, so a client (or
schemathesis) checking a response against them fails only on a missing or mistyped field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Open(BaseModel):
    """A JSON object whose listed fields are documented and whose others are allowed."""

    model_config = ConfigDict(extra="allow")


class ErrorBody(Open):
    """The ``error`` object of the envelope: all four keys are always present."""

    message: str
    type: Literal["invalid_request_error", "rate_limit_error", "server_error"]
    param: str | None
    code: str = Field(description="A code listed in docs/reference/api-server.md#error-codes.")


class Error(Open):
    """Every non-2xx response except 101 and 204 (docs/reference/api-server.md#error-envelope)."""

    error: ErrorBody


class Health(Open):
    """``GET /health``: liveness only."""

    status: str
    platform: str
    version: str


class Check(Open):
    """One readiness check."""

    ok: bool


class Readiness(Open):
    """The readiness checks: ``storage``, ``default_model``, ``event_loop``."""

    checks: dict[str, Check]


class WorkspaceInfo(Open):
    """Where the tools of new sessions work."""

    mode: Literal["fixed", "per_session"]
    path: str  # the fixed directory, or the folder holding the per-session folders


class ServerCounters(Open):
    """The ``api_server`` block of the detailed health."""

    host: str
    port: int
    uptime_s: float
    active_turns: int
    queued_runs: int
    active_runs: int
    stored_runs: int
    run_subscribers: int
    last_request_at: str | None
    workspace: WorkspaceInfo


class HealthDetailed(Open):
    """``GET /health/detailed`` (always 200)."""

    status: Literal["ok", "degraded"]
    platform: str
    version: str
    pid: int
    readiness: Readiness
    api_server: ServerCounters


class ModelEntry(Open):
    """One virtual model."""

    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    permission: list[Any] = Field(default_factory=list)
    root: str | None = None
    parent: str | None = None


class ModelList(Open):
    """``GET /v1/models``."""

    object: Literal["list"]
    data: list[ModelEntry]


class Probe(Open):
    """How a provider's catalog was obtained."""

    status: Literal["live", "cached", "skipped", "failed"]
    fetched_at: str | None = None
    error: str | None = None


class ShownPrice(Open):
    """One model's price per million tokens, formatted for display (``$3.00``, ``free``)."""

    input: str
    output: str
    cache: str | None = None
    free: bool


class ProviderOption(Open):
    """One provider of the picker inventory."""

    slug: str
    name: str
    is_current: bool
    is_user_defined: bool
    authenticated: bool
    requires_key: bool = True
    has_key: bool = False
    base_url: str | None = None
    models: list[str]
    total_models: int
    probe: Probe
    model_details: dict[str, dict[str, Any]] | None = None
    pricing: dict[str, ShownPrice] | None = None


class ModelOptionsList(Open):
    """``GET /api/model/options``: the core's model catalog."""

    object: Literal["hermes.model_options"]
    model: str | None
    provider: str | None
    refreshed: bool
    providers: list[ProviderOption]
    pricing_sources: list[str] = []


class EndpointRef(Open):
    """Where an endpoint lives."""

    method: Literal["GET", "POST", "DELETE"]
    path: str


class Features(Open):
    """The capability flags (the most-used ones listed; every upstream key is present)."""

    chat_completions: bool
    chat_completions_streaming: bool
    responses_api: bool
    responses_streaming: bool
    run_submission: bool
    run_events_sse: bool
    run_events_replay: dict[str, Any]
    runs_idempotency: dict[str, Any]
    tool_progress_events: bool
    reasoning_streaming: bool
    direct_model_requests: bool
    cors: bool
    session_chat: bool
    skills_api: bool
    browser_extension_control: dict[str, Any]


class SchemaStamp(Open):
    """The version and ``sha256`` of the schema export this server speaks (docs/integrating.md)."""

    version: str
    sha256: str


class Capabilities(Open):
    """``GET /v1/capabilities``: computed from this process's code and settings."""

    object: Literal["hermes.api_server.capabilities"]
    platform: str
    version: str
    model: str
    auth: dict[str, Any]
    runtime: dict[str, Any]
    features: Features
    endpoints: dict[str, EndpointRef]
    schema_: SchemaStamp = Field(alias="schema")


class ChatUsage(Open):
    """Token usage of one chat turn."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class HermesBlock(Open):
    """The ``hermes`` block: never carries ``null`` fields."""

    session_id: str | None = None
    model: str | None = None
    requested_model: str | None = None
    model_source: Literal["session", "default", "alias", "request"] | None = None
    completed: bool | None = None
    partial: bool | None = None
    failed: bool | None = None
    usage_estimated: bool | None = None
    error: str | None = None
    error_code: str | None = None
    meta_request: bool | None = None
    warnings: list[str] | None = None  # what the turn left out, e.g. "images_dropped"


class AssistantMessage(Open):
    """The reply message."""

    role: Literal["assistant"]
    content: str | None
    reasoning_content: str | None = None


class CompletionChoice(Open):
    """The single choice of a chat completion."""

    index: int
    message: AssistantMessage
    finish_reason: Literal["stop", "length", "content_filter", "error"]


class ChatCompletion(Open):
    """``POST /v1/chat/completions`` without ``stream`` (docs/reference/api-server.md#chat-response)."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: ChatUsage
    hermes: HermesBlock


class OutputText(Open):
    """Text content of a message item."""

    type: Literal["output_text"]
    text: str
    annotations: list[Any] = Field(default_factory=list)


class MessageItem(Open):
    """A contiguous text segment of the turn."""

    id: str
    type: Literal["message"]
    status: Literal["in_progress", "completed", "incomplete"]
    role: Literal["assistant"]
    content: list[OutputText]


class FunctionCallItem(Open):
    """A tool call that already ran on the server."""

    id: str
    type: Literal["function_call"]
    status: Literal["in_progress", "completed", "incomplete"]
    call_id: str
    name: str
    arguments: str


class FunctionCallOutputItem(Open):
    """A tool result; ``output`` is always a string."""

    id: str
    type: Literal["function_call_output"]
    status: Literal["in_progress", "completed", "incomplete"]
    call_id: str
    output: str


class ReasoningItem(Open):
    """Reasoning (only with ``show_reasoning``)."""

    id: str
    type: Literal["reasoning"]


OutputItem = Annotated[
    MessageItem | FunctionCallItem | FunctionCallOutputItem | ReasoningItem, Field(discriminator="type")
]


class ResponseUsage(Open):
    """Token usage of one Responses turn."""

    input_tokens: int
    output_tokens: int
    total_tokens: int


class ResponseError(Open):
    """Why a turn failed."""

    code: str
    message: str


class ResponseObject(Open):
    """A Responses object: non-stream 200, ``GET``, and terminal stream events
    (docs/reference/api-server.md#response-object)."""

    id: str
    object: Literal["response"]
    created_at: int
    status: Literal["in_progress", "completed", "incomplete", "failed", "cancelled"]
    model: str
    previous_response_id: str | None = None
    conversation: str | dict[str, Any] | None = None
    instructions: str | None = None
    store: bool = True
    metadata: dict[str, str] = Field(default_factory=dict)
    output: list[OutputItem]
    usage: ResponseUsage | None = None
    error: ResponseError | None = None
    incomplete_details: dict[str, Any] | None = None
    background: bool | None = None
    hermes: HermesBlock | None = None


class ResponseDeleted(Open):
    """``DELETE /v1/responses/{id}``."""

    id: str
    object: Literal["response"]
    deleted: Literal[True]


RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    Error,
    Health,
    HealthDetailed,
    ModelEntry,
    ModelList,
    ModelOptionsList,
    Capabilities,
    ChatCompletion,
    ResponseObject,
    ResponseDeleted,
)
