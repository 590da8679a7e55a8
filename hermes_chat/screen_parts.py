"""The pieces of what the chat shows (:mod:`hermes_chat.screen`): where it writes, a question
waiting for an answer, a tool call and the reply being streamed."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from hermes_chat.markdown_stream import MarkdownStream

QUESTION_KINDS = ("approval", "clarify", "sudo", "secret")


class Output(Protocol):
    """Where the screen writes."""

    def write(self, text: str, *, reply: bool = False) -> None:
        """Append finished text to the scrollback (``reply``: part of the assistant's answer)."""
        ...

    def refresh(self) -> None:
        """The live state changed; redraw it soon."""
        ...


@dataclass
class Question:
    """A question the agent is waiting on."""

    kind: str
    request_id: str
    payload: dict[str, Any]


@dataclass
class ToolCall:
    """A tool call, numbered in the order the chat saw it."""

    number: int
    name: str
    subject: str
    preview: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)


@dataclass
class Turn:
    """The reply being streamed."""

    stream: MarkdownStream
    user_row: int | None = None
    before_tools: str = ""  # text of the reply's earlier model calls, already committed
    reasoning: str = ""
    reasoning_shown: bool = False
    shown: list[tuple[str, str]] = field(default_factory=list)  # (role, text) already on screen
