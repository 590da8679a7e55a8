"""The payloads of a streamed chat completion: ``chat.completion.chunk`` and
``hermes.tool.progress`` frames (docs/reference/api-server.md#chat-stream).

They are ``TypedDict`` s: the encoders (:mod:`hermes_api_server.chat_stream`,
:mod:`hermes_api_server.chat_progress`) build every frame's dict with them at no run-time cost,
and ``hermes schema export`` turns the same types into closed JSON Schemas (a field not listed
here is never sent). The hot content chunk is written from a template made by encoding one of
these chunks (:meth:`hermes_api_server.chat_stream.ChatChunks._flush`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Field, WithJsonSchema, with_config
from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on 3.12+

CLOSED = ConfigDict(extra="forbid")
FinishReason = Literal["stop", "length", "content_filter", "error"]
#: the key that stands for a ``$ref`` to a body model's schema until the document is assembled
#: (:func:`hermes_api_server.openapi_schemas.component_schemas` resolves it); pydantic cannot refer
#: to a schema it did not make, and importing the body models here would slow the server's start
BODY_REF = "x-hermes-body-ref"


def body_ref(name: str) -> WithJsonSchema:
    """Mark a dict field as holding the body model ``name`` (e.g. ``HermesBlock``)."""
    return WithJsonSchema({BODY_REF: name})


#: the ``hermes`` block (``response_models.HermesBlock``), built as a dict by
#: :func:`hermes_api_server.outcomes.hermes_block`
HermesBlockDict = Annotated[dict[str, Any], body_ref("HermesBlock")]


class ChunkHead(TypedDict):
    """The envelope every chunk of one stream starts with (not a payload of its own)."""

    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str


@with_config(CLOSED)
class ChunkDelta(TypedDict, total=False):
    """What a chunk adds to the reply: the role (first chunk), text, reasoning (only with
    ``show_reasoning``); empty on the final chunk. The server runs its tools itself, so no
    ``tool_calls`` are ever streamed."""

    role: Literal["assistant"]
    content: str
    reasoning_content: str


@with_config(CLOSED)
class ChunkChoice(TypedDict):
    """The one streamed choice; ``finish_reason`` is set on the final chunk only."""

    index: Literal[0]
    delta: ChunkDelta
    finish_reason: FinishReason | None


@with_config(CLOSED)
class ChunkUsage(TypedDict):
    """Token usage of the turn (the final chunk, or its own chunk with ``include_usage``)."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


@with_config(CLOSED)
class ChunkError(TypedDict):
    """Why a failed turn failed (its final chunk; the SDKs raise on it)."""

    message: str
    type: Literal["server_error"]


@with_config(CLOSED)
class ChatCompletionChunk(TypedDict):
    """A ``data:`` frame of a chat stream (docs/reference/api-server.md#chat-stream): one choice,
    or none on the usage chunk of ``stream_options.include_usage``."""

    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    choices: Annotated[list[ChunkChoice], Field(max_length=1)]
    usage: NotRequired[ChunkUsage]
    hermes: NotRequired[HermesBlockDict]
    error: NotRequired[ChunkError]


@with_config(CLOSED)
class EmptyDelta(TypedDict):
    """The empty delta of a progress frame."""


@with_config(CLOSED)
class EmptyDeltaChoice(TypedDict):
    """The one choice of a progress frame: an empty delta, no finish."""

    index: Literal[0]
    delta: EmptyDelta
    finish_reason: None


@with_config(CLOSED)
class StatusData(TypedDict):
    """What Open WebUI shows as the status line."""

    description: str
    done: bool


@with_config(CLOSED)
class StatusEvent(TypedDict):
    """A frontend status event (Open WebUI's ``{"type": "status", "data": …}``)."""

    type: Literal["status"]
    data: StatusData


@with_config(CLOSED)
class ToolProgressChunk(TypedDict):
    """An ``event: hermes.tool.progress`` frame: upstream's fields in a chunk whose one choice has
    an empty delta, plus a status event for Open WebUI (docs/reference/api-server.md#chat-stream).
    A child agent shows as the tool ``subagent`` with its ids and place in the delegation."""

    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    choices: Annotated[list[EmptyDeltaChoice], Field(min_length=1, max_length=1)]
    tool: str
    emoji: str
    label: NotRequired[str]
    toolCallId: str  # upstream's wire name
    status: Literal["running", "completed"]
    #: the tool failed (never ``error``: SDKs end the stream on it)
    failed: NotRequired[bool]
    #: the call was denied (needs approval, or refused by policy)
    denied: NotRequired[Literal[True]]
    duration: NotRequired[float | None]
    subagent_id: NotRequired[str]
    parent_id: NotRequired[str | None]
    depth: NotRequired[int]
    task_index: NotRequired[int]
    task_count: NotRequired[int]
    event: StatusEvent


#: the chat stream's payload types, by schema name (exported by :mod:`hermes_api_server.openapi_doc`)
CHUNK_TYPES: dict[str, Any] = {
    "ChatCompletionChunk": ChatCompletionChunk,
    "ToolProgressChunk": ToolProgressChunk,
}
