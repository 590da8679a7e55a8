"""Transport-neutral fault injection (docs/reference/scenarios.md#faults).

A transport that supports faults asks :func:`frame_faults` once per connection (or SSE stream)
for a :class:`FrameCounter` and calls :meth:`FrameCounter.next_frame` before each frame it sends.
The answer says what to do with that frame: nothing (``None``), or a :class:`Fault` whose
``action`` the transport carries out: ``drop`` (close the connection without sending it),
``delay`` (wait ``delay_ms``, then send it), ``duplicate`` (send it twice), ``restart`` (close
every connection and the listener, listen again after ``delay_ms``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from hermes_core.scenarios.model import FaultRule

SCENARIO_PREFIX = "mock:scenario:"


@dataclass(frozen=True, slots=True)
class Fault:
    """What to do with one outgoing frame."""

    action: str
    delay_ms: int
    rule: FaultRule


class FrameFaults:
    """The fault rules of one scenario, with how often each has fired in this process."""

    def __init__(self, rules: tuple[FaultRule, ...]) -> None:
        self.rules = rules
        self._fired = [0] * len(rules)
        self._lock = threading.Lock()

    def counter(self, transport: str) -> FrameCounter | None:
        """Return a frame counter for one new connection of ``transport``, or None without rules."""
        mine = [i for i, rule in enumerate(self.rules) if rule.transport in (transport, "any")]
        return FrameCounter(self, mine) if mine else None

    def _take(self, index: int) -> bool:
        with self._lock:
            if self._fired[index] >= self.rules[index].times:
                return False
            self._fired[index] += 1
            return True


class FrameCounter:
    """Counts the frames of one connection and says which fault, if any, hits the next one."""

    def __init__(self, faults: FrameFaults, rule_indexes: list[int]) -> None:
        self._faults = faults
        self._indexes = rule_indexes
        self.sent = 0

    def next_frame(self) -> Fault | None:
        """Count one outgoing frame; return the fault to apply to it, if any.

        A rule fires on the frame that follows ``after_frames`` frames of this connection.
        """
        position = self.sent
        self.sent += 1
        for index in self._indexes:
            rule = self._faults.rules[index]
            if rule.after_frames == position and self._faults._take(index):
                return Fault(rule.action, rule.delay_ms, rule)
        return None


_CACHE: dict[str, FrameFaults] = {}
_CACHE_LOCK = threading.Lock()


def frame_faults(model: str | None, transport: str) -> FrameCounter | None:
    """Return the frame counter for a new connection when the model is a scenario with faults.

    :param model: the configured model reference (``mock:scenario:PATH`` turns faults on).
    :param transport: ``tui`` (the WebSocket gateway) or ``api`` (SSE streams).
    :returns: a counter, or None when nothing is to be injected.
    """
    if not model or not model.startswith(SCENARIO_PREFIX):
        return None
    path = model[len(SCENARIO_PREFIX) :]
    with _CACHE_LOCK:
        faults = _CACHE.get(path)
        if faults is None:
            from hermes_core.scenarios.parse import load_scenario

            faults = FrameFaults(load_scenario(path).faults)
            _CACHE[path] = faults
    return faults.counter(transport)
