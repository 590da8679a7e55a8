"""Message builders and a chunk collector shared by the mock provider tests."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from hermes_core import (
    ChatMessage,
    Chunk,
    FinishChunk,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    ToolCallRequest,
    UsageChunk,
)


@dataclass
class Reply:
    """Everything one mock call streamed, with convenient views."""

    chunks: list[Chunk] = field(default_factory=list)

    @property
    def deltas(self) -> list[str]:
        """Return the text deltas in order."""
        return [c.text for c in self.chunks if isinstance(c, TextChunk)]

    @property
    def text(self) -> str:
        """Return the concatenated reply text."""
        return "".join(self.deltas)

    @property
    def reasoning(self) -> list[str]:
        """Return the reasoning deltas in order."""
        return [c.text for c in self.chunks if isinstance(c, ReasoningChunk)]

    @property
    def calls(self) -> list[ToolCallRequest]:
        """Return the requested tool calls in order."""
        return [c.call for c in self.chunks if isinstance(c, ToolCallChunk)]

    @property
    def usage(self) -> UsageChunk:
        """Return the single usage chunk."""
        usages = [c for c in self.chunks if isinstance(c, UsageChunk)]
        assert len(usages) == 1
        return usages[0]

    @property
    def finish(self) -> str:
        """Return the finish reason of the final chunk."""
        last = self.chunks[-1]
        assert isinstance(last, FinishChunk)
        return last.reason


def user(text: str) -> ChatMessage:
    """Return a user message."""
    return ChatMessage(role="user", content=text)


def assistant(text: str, calls: Sequence[ToolCallRequest] = ()) -> ChatMessage:
    """Return an assistant message, optionally carrying tool calls."""
    return ChatMessage(role="assistant", content=text, tool_calls=tuple(calls))


def tool(call_id: str, text: str, name: str = "terminal") -> ChatMessage:
    """Return a tool-result message."""
    return ChatMessage(role="tool", content=text, tool_call_id=call_id, name=name)


# The ``collect`` fixture: ``await collect(messages_or_text, model="echo", purpose="turn")``.
Collect = Callable[..., Awaitable[Reply]]
