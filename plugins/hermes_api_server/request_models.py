"""Pydantic models of the request bodies (docs/reference/api-server.md), the source of the OpenAPI request
schemas (docs/reference/api-server.md#get-openapijson).

Each model states the rules its handler enforces (types, enums, required fields, size limits), so
``model_validate`` accepts a body exactly when the handler's own checks would let it through to
the turn; ``tests/api`` holds the two to that. OpenAI clients and upstream hosts send fields this
server ignores, so every body model allows extra properties
(docs/reference/api-server.md#limits-idempotency-and-extra-fields), unlike the settings models. Optional
fields accept ``null``: the handlers treat a ``null`` like an absent field. Validation is strict (``"yes"`` is
not a boolean, ``"1"`` not an integer), because the handlers never coerce. Rules a schema cannot state (the
last message must be a user message, a ``data:`` URL must decode, a workspace must exist) stay with the
handlers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
BoolWord = Literal["true", "1", "yes", "on", "false", "0", "no", "off"]


def _not_dot_segment(value: str) -> str:
    if value in (".", ".."):
        raise ValueError("a session id may not be . or ..")
    return value


# The core's id grammar (docs/reference/core.md#session-ids); the regex engine has no look-ahead, hence the
# ``not``.
SessionId = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9_:.\-]{1,256}$"),
    AfterValidator(_not_dot_segment),
    Field(json_schema_extra={"not": {"enum": [".", ".."]}}),
]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]
IdField = Annotated[str, StringConstraints(min_length=1, max_length=256)]
Metadata = Annotated[dict[str, str], Field(max_length=16, description="At most 16 string values.")]
MAX_PARTS = 1000


class OpenBody(BaseModel):
    """A JSON object that may carry fields this server ignores."""

    model_config = ConfigDict(extra="allow", strict=True)


ImageRef = Annotated[str, StringConstraints(pattern=r"^(https?://|data:image/)")]


class ImageUrl(OpenBody):
    """The object form of an image URL."""

    url: ImageRef = Field(description="An http(s) URL or a data:image/… URL.")
    detail: str | None = None


class TextContentPart(OpenBody):
    """A text part."""

    type: Literal["text", "input_text", "output_text"]
    text: str


class ImageContentPart(OpenBody):
    """An image part: an http(s) or ``data:image/…`` URL, bare or as ``{"url": …}``."""

    type: Literal["image_url", "input_image"]
    image_url: ImageRef | ImageUrl


ContentPart = Annotated[TextContentPart | ImageContentPart, Field(discriminator="type")]
Content = str | Annotated[list[str | ContentPart], Field(max_length=MAX_PARTS)]


class ChatMessage(OpenBody):
    """A chat message; ``tool`` and ``function`` messages are accepted and dropped."""

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Content | None = None


class StreamOptions(OpenBody):
    """Chat streaming options."""

    include_usage: bool | None = None


class Reasoning(OpenBody):
    """Reasoning controls inside ``model_options``."""

    enabled: bool | None = None
    effort: Effort | None = None


class ModelOptions(OpenBody):
    """Per-turn model options (a Hermes extension, docs/reference/api-server.md#model-selection); unknown keys
    are ignored."""

    reasoning_effort: Effort | None = None
    reasoning: Reasoning | None = None
    service_tier: str | None = None


class ModelSelection(OpenBody):
    """The model fields every agent POST shares (docs/reference/api-server.md#model-selection)."""

    model: str | None = Field(default=None, description="A virtual name, alias or provider:model.")
    provider: str | None = None
    model_options: ModelOptions | None = None


class ChatCompletionRequest(ModelSelection):
    """``POST /v1/chat/completions`` (docs/reference/api-server.md#chat-request)."""

    messages: Annotated[list[ChatMessage], Field(min_length=1)] = Field(
        description="The conversation; the last message must be a user message with text or an image."
    )
    stream: bool | BoolWord | None = None
    stream_options: StreamOptions | None = None
    n: Literal[1] | None = None


class HistoryEntry(OpenBody):
    """An entry of ``conversation_history`` (explicit history for a new session)."""

    role: Literal["user", "assistant", "system"]
    content: Content | None = None


class InputItem(OpenBody):
    """A Responses input item: a message, or echoed ``function_call``/``function_call_output``."""

    type: Literal["message", "function_call", "function_call_output", "reasoning"] | None = None
    role: Literal["user", "assistant", "system", "developer"] | None = None
    content: Content | None = None


Input = NonEmpty | Annotated[list[str | InputItem], Field(min_length=1)]


class ConversationRef(OpenBody):
    """The object form of ``conversation``."""

    id: NonEmpty


class EffortOnly(OpenBody):
    """Responses ``reasoning``: its ``effort`` maps to ``model_options.reasoning_effort``."""

    effort: Effort | None = None


class ResponseCreateRequest(ModelSelection):
    """``POST /v1/responses`` (docs/reference/api-server.md#responses-request)."""

    input: Input = Field(description="A string, or items whose last one is a user message.")
    instructions: str | None = None
    previous_response_id: NonEmpty | None = None
    conversation: NonEmpty | ConversationRef | None = None
    conversation_history: list[HistoryEntry] | None = None
    store: bool | None = None
    stream: bool | BoolWord | None = None
    metadata: Metadata | None = None
    reasoning: EffortOnly | None = None
    truncation: Literal["auto", "disabled"] | None = None
    background: bool | None = Field(
        default=None, description="Answer at once and run the turn in the background (needs store)."
    )


class RunCreateRequest(ModelSelection):
    """``POST /v1/runs`` (docs/reference/api-server.md#post-v1runs)."""

    input: Input = Field(description="A string, or items whose last one is a user message.")
    instructions: str | None = None
    session_id: SessionId | Literal[""] | None = None
    previous_response_id: NonEmpty | None = None
    conversation_history: list[HistoryEntry] | None = None
    metadata: Metadata | None = None
    cwd: str | None = Field(default=None, description="An absolute directory inside workspace_roots.")


class TextOnlyPart(OpenBody):
    """A text content part of steer input."""

    type: Literal["text", "input_text", "output_text"]
    text: str


SteerText = str | list[str | TextOnlyPart]


class SteerRequest(OpenBody):
    """``POST /v1/runs/{run_id}/steer`` (docs/reference/api-server.md#steer-a-run): the text is ``input``,
    else ``message``, else ``text``."""

    input: SteerText | None = None
    message: SteerText | None = None
    text: SteerText | None = None


class ApprovalRequest(OpenBody):
    """``POST /v1/runs/{run_id}/approval`` (docs/reference/api-server.md#answer-a-runs-approval)."""

    choice: str = Field(
        description="once, session, always or deny (case-insensitive; approve/allow mean once)."
    )
    request_id: IdField | None = None
    all: bool | None = None
    resolve_all: bool | None = None


class BrowserRegisterRequest(OpenBody):
    """``POST /v1/browser-control/register`` (docs/reference/api-server.md#browser-control); a client-sent
    ``principal_id`` is ignored."""

    protocol_version: Literal[1]
    session_id: IdField
    controller_id: IdField
    browser_profile_id: IdField
    capabilities: list[str]


REQUEST_MODELS: dict[str, type[BaseModel]] = {
    "createChatCompletion": ChatCompletionRequest,
    "createResponse": ResponseCreateRequest,
    "createRun": RunCreateRequest,
    "steerRun": SteerRequest,
    "respondRunApproval": ApprovalRequest,
    "registerBrowserController": BrowserRegisterRequest,
}


def request_schemas(ref_template: str = "#/components/schemas/{model}") -> dict[str, Any]:
    """Return the JSON Schemas of every request model and of everything they reference.

    :param ref_template: where ``$ref`` points (the OpenAPI components by default).
    :returns: ``{name: schema}``, ready for ``components.schemas``.
    """
    from pydantic.json_schema import models_json_schema

    _, top = models_json_schema(
        [(model, "validation") for model in REQUEST_MODELS.values()], ref_template=ref_template
    )
    return dict(top.get("$defs", {}))
