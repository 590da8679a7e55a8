"""One delegated child agent (docs/reference/core.md#subagents): where it sits and how it is seen.

A child session carries a :class:`Lineage` (``Session.lineage``): its parent, its depth, the
session its questions are asked on and its tool-round cap; :func:`question_route` reads it to
send a child's questions to the root of its tree, tagged with the child's id. The child's entry
in the kernel's table (:class:`hermes_core.subagents.Subagents`) is a :class:`Subagent`: what it
was asked, its state and its live session while it runs, with the JSON-ready ``snapshot()``
hosts list; :func:`subagent_payload` is the JSON object every transport sends for a
``subagent.<kind>`` event.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_core.events import SubagentEvent, SubagentStatus, Usage

if TYPE_CHECKING:
    from hermes_core.session.live import Session

TAIL_CHARS = 16 * 1024
TERMINAL: frozenset[str] = frozenset({"completed", "error", "interrupted"})


@dataclass(frozen=True, slots=True)
class Lineage:
    """Where a child session sits: its parent, its depth (1 under a top-level session), the
    session its questions are asked on, and its own tool-round cap."""

    subagent_id: str
    parent_id: str
    depth: int
    asks_on: str
    tool_round_limit: int | None = None


@dataclass(slots=True, eq=False)
class Subagent:
    """One child in the table: what it was asked, its state, and its live session while it runs."""

    subagent_id: str
    parent_id: str
    depth: int
    goal: str
    task_index: int = 0
    task_count: int = 1
    model: str | None = None
    role: str = "leaf"
    delegation_id: str | None = None
    status: SubagentStatus = "queued"
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    summary: str = ""
    error: str | None = None
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    tail: str = ""
    session: Session | None = None
    task: asyncio.Task[Any] | None = None

    @property
    def active(self) -> bool:
        return self.status not in TERMINAL

    @property
    def background(self) -> bool:
        return self.delegation_id is not None

    def add_tail(self, text: str) -> None:
        """Keep the last ``TAIL_CHARS`` of what the child wrote."""
        self.tail = (self.tail + text)[-TAIL_CHARS:]

    def snapshot(self) -> dict[str, Any]:
        """Return the JSON-ready view hosts list and spawn trees store."""
        end = self.ended_at if self.ended_at is not None else time.time()
        return {
            "subagent_id": self.subagent_id,
            "parent_id": self.parent_id,
            "depth": self.depth,
            "goal": self.goal,
            "task_index": self.task_index,
            "task_count": self.task_count,
            "model": self.model,
            "role": self.role,
            "status": self.status,
            "background": self.background,
            "delegation_id": self.delegation_id,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "duration_s": round(end - self.started_at, 3),
            "summary": self.summary,
            "error": self.error,
            "tool_calls": self.tool_calls,
            "usage": {"input": self.usage.input, "output": self.usage.output, "total": self.usage.total},
        }


def subagent_payload(ev: SubagentEvent, redact: Callable[[str], str]) -> dict[str, Any]:
    """Return the JSON object every transport sends for a ``subagent.<kind>`` event: the typed
    fields, ``usage`` as ``{input, output, total}``, then the kind's payload (strings redacted)."""
    payload: dict[str, Any] = {
        "subagent_id": ev.subagent_id,
        "parent_id": ev.parent_id,
        "depth": ev.depth,
        "goal": redact(ev.goal),
        "task_index": ev.task_index,
        "task_count": ev.task_count,
        "model": ev.model,
        "status": ev.status,
    }
    if ev.usage is not None:
        payload["usage"] = {"input": ev.usage.input, "output": ev.usage.output, "total": ev.usage.total}
    if ev.delegation_id is not None:
        payload["delegation_id"] = ev.delegation_id
    for key, value in ev.payload.items():
        payload[key] = redact(value) if isinstance(value, str) else value
    return payload


def question_route(session: Session, turn_id: str | None) -> tuple[str, str | None, str | None]:
    """Return where a question of ``session``'s turn ``turn_id`` is asked: the session id, the
    ``task_id`` tag and the turn id. A child asks on the root session, during the turn running
    there (so that turn's own listeners see it too), tagged with the child's id."""
    lineage = session.lineage
    if lineage is not None:
        root = session.kernel.sessions.get(lineage.asks_on)
        run = root.run if root is not None else None
        return lineage.asks_on, lineage.subagent_id, run.turn_id if run is not None else None
    return session.id, getattr(session, "task_id", None), turn_id
