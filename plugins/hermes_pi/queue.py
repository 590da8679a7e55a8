"""pi's two queues, steering and follow-up, over the core's steer
(docs/reference/pi.md#steer-follow-up-and-the-queue).

Steering text goes to ``Session.steer`` while a tool round can still take it, and is held here
otherwise (no turn runs, the turn is finishing, or it carries images). Follow-ups are always held
here. When a turn ends, the transport submits what pi would run next in the same run: the held
steering first (pi delivers it before the next model call), else the next follow-up (or all of
them in ``all`` mode). Held messages outlive an abort and wait for the next prompt.
``queue_update`` always shows both lists whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hermes_core import Part, parts_text


@dataclass(slots=True)
class Pending:
    """A queued message: its text (what ``queue_update`` shows) and its content parts."""

    parts: list[Part]

    @property
    def text(self) -> str:
        return parts_text(self.parts)


@dataclass(slots=True)
class PiQueue:
    """What pi shows as queued, wherever each message waits."""

    #: Steering the running turn accepted, delivered at its next tool boundary.
    accepted: list[str] = field(default_factory=list)
    #: Steering held for the next turn.
    held_steer: list[Pending] = field(default_factory=list)
    #: Follow-ups, oldest first.
    held_follow: list[Pending] = field(default_factory=list)
    _last: dict[str, Any] = field(default_factory=lambda: {"steering": [], "followUp": []})

    def snapshot(self) -> dict[str, list[str]]:
        """Return ``{steering, followUp}`` as pi reports them."""
        return {
            "steering": [*self.accepted, *(p.text for p in self.held_steer)],
            "followUp": [p.text for p in self.held_follow],
        }

    def changed(self) -> dict[str, Any] | None:
        """Return a ``queue_update`` record when the lists differ from the last one sent."""
        now = self.snapshot()
        if now == self._last:
            return None
        self._last = now
        return {"type": "queue_update", **now}

    @property
    def count(self) -> int:
        """pi's ``pendingMessageCount``."""
        return len(self.accepted) + len(self.held_steer) + len(self.held_follow)

    def reset(self) -> None:
        """Forget everything (the session was replaced)."""
        self.accepted.clear()
        self.held_steer.clear()
        self.held_follow.clear()
