"""Transport-neutral fault injection (docs/reference/scenarios.md#faults).

A transport that supports faults asks :func:`frame_faults` once per connection (or SSE stream)
for a :class:`FrameCounter` and calls :meth:`FrameCounter.next_frame` before each frame it sends.
The answer says what to do with that frame: nothing (``None``), or a :class:`Fault` whose
``action`` the transport carries out: ``drop`` (close the connection without sending it),
``delay`` (wait ``delay_ms``, then send it), ``duplicate`` (send it twice), ``restart`` (close
every connection and the listener, listen again after ``delay_ms``).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path as FsPath

from hermes_core.scenarios.model import FaultRule

SCENARIO_PREFIX = "mock:scenario:"
#: The file in the data directory that keeps how often each fault rule fired.
STATE_FILE = "scenario-faults.json"


@dataclass(frozen=True, slots=True)
class Fault:
    """What to do with one outgoing frame."""

    action: str
    delay_ms: int
    rule: FaultRule


class FrameFaults:
    """The fault rules of one scenario, with how often each has fired.

    :param rules: the scenario's rules.
    :param state: a JSON file keeping the counts across processes (a stdio host respawns the
        process a fault ended), keyed by ``key``; None keeps them in this process only.
    :param key: the scenario's path, naming its counts in ``state``.
    """

    def __init__(self, rules: tuple[FaultRule, ...], state: FsPath | None = None, key: str = "") -> None:
        self.rules = rules
        self._fired = [0] * len(rules)
        self._lock = threading.Lock()
        self._state = state
        self._key = key
        if state is not None:
            saved = _read_state(state).get(key)
            if (
                isinstance(saved, list)
                and len(saved) == len(rules)
                and all(isinstance(n, int) for n in saved)
            ):
                self._fired = list(saved)

    def counter(self, transport: str) -> FrameCounter | None:
        """Return a frame counter for one new connection of ``transport``, or None without rules."""
        mine = [i for i, rule in enumerate(self.rules) if rule.transport in (transport, "any")]
        return FrameCounter(self, mine) if mine else None

    def _take(self, index: int) -> bool:
        with self._lock:
            if self._fired[index] >= self.rules[index].times:
                return False
            self._fired[index] += 1
            if self._state is not None:
                _write_state(self._state, self._key, self._fired)
            return True


def _read_state(path: FsPath) -> dict[str, object]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _write_state(path: FsPath, key: str, fired: list[int]) -> None:
    state = _read_state(path)
    state[key] = list(fired)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(state, sort_keys=True), encoding="utf-8")
    except OSError:
        pass  # the counts then hold for this process only


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


def frame_faults(model: str | None, transport: str, *, data_dir: FsPath | None = None) -> FrameCounter | None:
    """Return the frame counter for a new connection when the model is a scenario with faults.

    :param model: the configured model reference (``mock:scenario:PATH`` turns faults on).
    :param data_dir: the data directory; its ``scenario-faults.json`` keeps how often each rule
        fired, so a respawned process goes on counting (docs/reference/scenarios.md#faults-on-stdio).
    :param transport: ``tui`` (the gateway, over WebSocket or stdio), ``api`` (SSE streams) or
        ``acp`` (``hermes acp`` on stdio).
    :returns: a counter, or None when nothing is to be injected.
    """
    if not model or not model.startswith(SCENARIO_PREFIX):
        return None
    path = model[len(SCENARIO_PREFIX) :]
    with _CACHE_LOCK:
        faults = _CACHE.get(path)
        if faults is None:
            from hermes_core.scenarios.parse import load_scenario

            state = data_dir / STATE_FILE if data_dir is not None else None
            faults = FrameFaults(load_scenario(path).faults, state, path)
            _CACHE[path] = faults
    return faults.counter(transport)
