"""``hermes_on_event`` implementations may name the event types they want (``watches``, issue #30):
they see those only, and an event nobody wants costs no hook call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pluggy
import pytest

from hermes_core import Event, TextDelta, TurnCompleted, TurnStarted, hookimpl, watches
from hermes_core.testing import make_kernel

MEMORY = {"storage": {"backend": "memory"}, "titles": {"refine": False}, "model": "mock:echo"}


class Everything:
    """Declares nothing: sees every event."""

    hermes_plugin_name = "everything"

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def hermes_on_event(self, event: Event) -> None:
        self.seen.append(type(event).__name__)


class Ends:
    """A method that wants the turn's ends only."""

    hermes_plugin_name = "ends"

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    @watches(TurnStarted, TurnCompleted)
    def hermes_on_event(self, session: Any, event: Event) -> None:
        self.seen.append(type(event).__name__)


class Deltas:
    """A module-style function (no ``self``), the decorator over ``@hookimpl``."""

    hermes_plugin_name = "deltas"

    def __init__(self) -> None:
        self.seen: list[str] = []
        seen = self.seen

        @watches(TextDelta)
        @hookimpl
        def hermes_on_event(event: Event) -> None:
            seen.append(type(event).__name__)

        self.hermes_on_event = hermes_on_event


async def _turn(plugins: Sequence[Any], tmp_path: Path) -> list[str]:
    """Run one echo turn; return the hook calls of ``hermes_on_event`` pluggy saw, by event type."""
    kernel = make_kernel(*plugins, entry_points=["mock"], settings=MEMORY)
    called: list[str] = []

    def before(name: str, impls: Sequence[pluggy.HookImpl], kwargs: dict[str, Any]) -> None:
        if name == "hermes_on_event":
            called.append(type(kwargs["event"]).__name__)

    kernel.pm.add_hookcall_monitoring(before, lambda *_: None)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        turn = await session.submit("hello there", owner="t")
        assert any(isinstance(e, TurnCompleted) for e in [e async for e in turn.events()])
        await session.close()
    return called


async def test_each_implementation_sees_the_types_it_watches(tmp_path: Path) -> None:
    everything, ends, deltas = Everything(), Ends(), Deltas()
    await _turn([everything, ends, deltas], tmp_path)
    assert "TextDelta" in everything.seen and "UsageUpdated" in everything.seen
    assert ends.seen == ["TurnStarted", "TurnCompleted"]
    assert deltas.seen and set(deltas.seen) == {"TextDelta"}


async def test_an_event_no_implementation_wants_makes_no_hook_call(tmp_path: Path) -> None:
    # The mock plugin (always loaded) and these two all declare their types: a delta or a usage
    # update is then never handed to pluggy at all.
    ends = Ends()
    called = await _turn([ends], tmp_path)
    assert ends.seen == ["TurnStarted", "TurnCompleted"]
    assert "TurnStarted" in called and "TurnCompleted" in called
    assert "TextDelta" not in called and "UsageUpdated" not in called
    # One implementation that declares nothing brings every event back to every call.
    called = await _turn([Ends(), Everything()], tmp_path)
    assert "TextDelta" in called and "UsageUpdated" in called


def test_watches_needs_an_event_parameter_and_a_type() -> None:
    with pytest.raises(TypeError):
        watches(TurnStarted)(lambda session: None)
    with pytest.raises(TypeError):
        watches()
