"""The ``hermes.tool.progress`` frames of a streamed chat completion
(docs/reference/api-server.md#chat-stream).

One frame serves every reader at once:

- named ``event: hermes.tool.progress``, with ``tool``, ``toolCallId`` and ``status`` at the top
  level, for clients that read tool progress (typed clients of this API);
- its data is also a valid ``chat.completion.chunk`` with **one choice whose delta is empty**,
  so the canonical SDK loop ``chunk.choices[0].delta.content or ""`` (openai-python and
  openai-node yield named events as chunks too) reads nothing instead of raising;
- a top-level ``event: {"type": "status", "data": {"description", "done"}}``, which Open WebUI
  shows as a live status line above the reply and keeps with the message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_api_server.chunk_models import (
    ChunkHead,
    EmptyDelta,
    EmptyDeltaChoice,
    StatusData,
    StatusEvent,
    ToolProgressChunk,
)
from hermes_api_server.errors import dumps
from hermes_core import QuestionClosed, SubagentEvent, ToolAnnounced, ToolCompleted, ToolDecision

if TYPE_CHECKING:
    from hermes_core import Event, Kernel

LABEL_CHARS = 200


EVENT_NAME = "hermes.tool.progress"


class ProgressFrames:
    """Turn one turn's tool and child-agent events into progress frames.

    :param kernel: for tool specs (emoji) and the redactor.
    :param head: the chunk envelope every frame starts from (id, object, created, model).
    """

    def __init__(self, kernel: Kernel, head: ChunkHead) -> None:
        self.kernel = kernel
        self.head = head
        self._titles: dict[str, str] = {}
        self._denied: set[str] = set()

    def note(self, event: Event) -> None:
        """Remember a call that was denied: by policy, or asked with nobody to answer."""
        if isinstance(event, ToolDecision) and event.decision == "deny":
            self._denied.add(event.call_id)
        elif (
            isinstance(event, QuestionClosed)
            and event.kind == "approval"
            and event.call_id
            and (event.reason == "no_answerer" or event.choice == "deny")
        ):
            self._denied.add(event.call_id)

    def frame(self, event: Event) -> str | None:
        """Return the frame of a tool or child-agent event, or None for one that shows nothing."""
        payload: ToolProgressChunk | None
        if isinstance(event, ToolAnnounced | ToolCompleted):
            payload = self._tool(event)
        elif isinstance(event, SubagentEvent) and event.kind in ("start", "complete"):
            payload = self._subagent(event)
        else:
            return None
        if payload is None:
            return None
        return f"event: {EVENT_NAME}\ndata: {dumps(payload)}\n\n"

    def _chunk(self, tool: str, emoji: str, call_id: str, done: bool, title: str) -> ToolProgressChunk:
        return ToolProgressChunk(
            **self.head,
            choices=[EmptyDeltaChoice(index=0, delta=EmptyDelta(), finish_reason=None)],
            tool=tool,
            emoji=emoji,
            toolCallId=call_id,
            status="completed" if done else "running",
            event=StatusEvent(type="status", data=StatusData(description=title, done=done)),
        )

    def _tool(self, event: ToolAnnounced | ToolCompleted) -> ToolProgressChunk | None:
        if event.name.startswith("_"):
            return None
        spec = self.kernel.registry.tools.get(event.name)
        emoji = spec.emoji if spec and spec.emoji else "🔧"
        if isinstance(event, ToolAnnounced):
            label = self.kernel.redactor(event.preview)[:LABEL_CHARS]
            # The preview already says what happens ("Run: ls -la"); the tool name stands in
            # for a tool without one.
            title = f"{emoji} {label or event.name}"
            self._titles[event.call_id] = title
            running = self._chunk(event.name, emoji, event.call_id, False, title)
            running["label"] = label
            return running
        denied = event.call_id in self._denied
        title = self._titles.pop(event.call_id, f"{emoji} {event.name}")
        ending = "denied" if denied else "failed" if event.is_error else f"done in {event.duration_s:.1f} s"
        done = self._chunk(event.name, emoji, event.call_id, True, f"{title} — {ending}")
        # Not ``error``: the openai SDK aborts the whole stream on any frame whose top-level
        # ``error`` is truthy, and a failed tool is not a failed stream.
        done["failed"] = event.is_error
        done["duration"] = round(event.duration_s, 3)
        if denied:
            done["denied"] = True
        return done

    def _subagent(self, event: SubagentEvent) -> ToolProgressChunk:
        # A child agent shows like a tool: running when it starts, completed when it ends.
        done = event.kind == "complete"
        goal = self.kernel.redactor(event.goal)[:LABEL_CHARS]
        title = f"🤖 subagent: {goal}"
        failed = event.status != "completed"
        if done:
            title += " — failed" if failed else " — done"
        payload = self._chunk("subagent", "🤖", f"subagent-{event.subagent_id}", done, title)
        payload["label"] = goal
        payload["subagent_id"] = event.subagent_id
        payload["parent_id"] = event.parent_id
        payload["depth"] = event.depth
        payload["task_index"] = event.task_index
        payload["task_count"] = event.task_count
        if done:
            payload["failed"] = failed
            duration = event.payload.get("duration_s")
            payload["duration"] = duration if isinstance(duration, int | float) else None
        return payload
