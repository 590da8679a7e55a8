"""The model-provider protocol: what a provider plugin receives and streams back
(docs/reference/core.md#providers-and-models).

A provider turns a :class:`ChatRequest` into an async stream of chunks. Tool-call fragments are
assembled by the provider, which yields each call once it is complete. Failures are raised as
:class:`hermes_core.errors.ProviderError`; a provider must never hang (it applies its own
connect and stall timeouts and raises ``network`` on them).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from hermes_core.content import Part, Role
    from hermes_core.errors import ProviderError

log = logging.getLogger("hermes.providers")


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One model a provider offers."""

    id: str
    context_window: int | None = None
    vision: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call as the model asked for it; ``id`` is the provider's id."""

    id: str
    name: str
    arguments: str  # JSON text exactly as the model produced it


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """A tool offered to the model (JSON-schema parameters)."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of the request history.

    ``content`` holds the text; ``parts`` (user messages only) adds images. Assistant messages
    may carry ``tool_calls``; tool messages carry ``tool_call_id`` (the provider's id) and
    ``name``.
    """

    role: Role
    content: str
    parts: tuple[Part, ...] = ()
    tool_calls: tuple[ToolCallRequest, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


Purpose = Literal["turn", "one_shot", "title", "compress"]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """Everything one model call needs.

    :param model: the provider's own model id (no ``provider:`` prefix).
    :param purpose: why the core calls: a turn, a one-shot, a title refinement or a
        compression summary. Informational: a title or summary request carries its own
        instruction (``system``) and output limit, so a provider needs no special case.
    """

    model: str
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSchema, ...] = ()
    system: str | None = None
    reasoning_effort: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    purpose: Purpose = "turn"


@dataclass(frozen=True, slots=True)
class TextChunk:
    """Reply text from the provider's stream."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningChunk:
    """Reasoning text from the provider's stream."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A tool call from the provider's stream."""

    call: ToolCallRequest


@dataclass(frozen=True, slots=True)
class UsageChunk:
    """Token counts as reported by the upstream for this call."""

    input: int
    output: int
    reasoning: int = 0


FinishReason = Literal["stop", "length", "refusal", "tool_calls"]


@dataclass(frozen=True, slots=True)
class FinishChunk:
    """The end of the provider's stream and why it stopped."""

    reason: FinishReason


Chunk = TextChunk | ReasoningChunk | ToolCallChunk | UsageChunk | FinishChunk
CHUNK_TYPES = (TextChunk, ReasoningChunk, ToolCallChunk, UsageChunk, FinishChunk)


def not_a_chunk(provider: str, value: object) -> ProviderError:
    """Return the error that ends a call whose provider yielded ``value``, which is no chunk.

    A provider bug must fail the call visibly, never vanish: the turn ends ``provider_error``
    with this message, and a title or summary request fails with it.
    """
    from hermes_core.errors import ProviderError

    kind = type(value).__name__
    hint = "; wrap text as TextChunk(text)" if isinstance(value, str) else ""
    message = (
        f"provider {provider!r} yielded a {kind}, which is not a chunk (TextChunk, ReasoningChunk, "
        f"ToolCallChunk, UsageChunk or FinishChunk){hint}"
    )
    log.error("%s", message)
    return ProviderError("upstream", message)


@runtime_checkable
class Provider(Protocol):
    """A live provider instance made by a :class:`ProviderSpec` factory."""

    def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        """Stream one model call; raise ``ProviderError`` on failure."""
        ...

    async def list_models(self) -> list[ModelInfo]:
        """Return the models known offline (static list or cache); never touch the network."""
        ...

    async def probe(self, timeout: float) -> list[ModelInfo]:
        """Ask the upstream for its live model list; raise ``ProviderError`` on failure."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


@dataclass(frozen=True, slots=True)
class ProviderPreset:
    """A named endpoint served by a generic provider (e.g. ``openrouter`` on ``openai``)."""

    name: str
    summary: str
    base_url: str
    env_vars: Mapping[str, str] = field(default_factory=dict)
    models: tuple[ModelInfo, ...] = ()
    requires_key: bool = True
