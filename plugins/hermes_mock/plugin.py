"""Register the deterministic offline ``mock`` model provider (docs/mock-provider.md).

Cheap to import: the provider implementation is imported by the factory when the kernel builds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import (
    ProviderSpec,
    QuestionClosed,
    QuestionRequested,
    ToolAnnounced,
    ToolCompleted,
    TurnCompleted,
    TurnStarted,
    hookimpl,
    watches,
)

if TYPE_CHECKING:
    from hermes_core import Event, Session


def make_provider(settings: Any = None, *, name: str = "mock", preset: Any = None) -> Any:
    """Build the mock provider.

    :param settings: the provider settings (a plain dict, ``providers.mock``); ``time_scale``
        multiplies the pauses of scenarios and replays (default 1, 0 streams at once).
    :param name: the provider name it is registered under.
    :param preset: unused; the mock has no presets.
    :returns: a :class:`hermes_mock.provider.MockProvider`.
    :raises ValueError: ``time_scale`` is not a number >= 0.
    """
    from hermes_mock.provider import MockProvider

    scale = (settings or {}).get("time_scale", 1.0) if isinstance(settings, dict) else 1.0
    if isinstance(scale, bool) or not isinstance(scale, int | float) or scale < 0:
        raise ValueError(f"providers.mock.time_scale must be a number >= 0, got {scale!r}")
    return MockProvider(name=name, time_scale=float(scale))


SPEC = ProviderSpec(
    name="mock",
    summary="Deterministic offline replies and directives for testing hosts without a real model",
    factory=make_provider,
    requires_key=False,
    open_model_list=False,
    model_prefixes=("scenario:", "replay:"),
)


@hookimpl
def hermes_model_providers() -> ProviderSpec:
    """Declare the ``mock`` provider.

    :returns: its spec.
    """
    return SPEC


@hookimpl
@watches(TurnStarted, TurnCompleted, ToolAnnounced, ToolCompleted, QuestionRequested, QuestionClosed)
def hermes_on_event(session: Session, event: Event) -> None:
    """Watch the questions of scenario turns, so the provider can enforce ``expect``
    (docs/reference/scenarios.md#expected-questions), and fail on purpose where a scenario turn
    names a ``session_problem``. Only the types these two read are asked for: every other event
    (deltas above all) then costs the kernel no hook call."""
    from hermes_mock import expect_check, turn_start

    expect_check.observe(session.id, event)
    turn_start.check(session, event)
