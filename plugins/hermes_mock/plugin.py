"""Register the deterministic offline ``mock`` model provider (docs/mock-provider.md).

Cheap to import: the provider implementation is imported by the factory when the kernel builds it.
"""

from __future__ import annotations

from typing import Any

from hermes_core import ProviderSpec, hookimpl


def make_provider(settings: Any = None, *, name: str = "mock", preset: Any = None) -> Any:
    """Build the mock provider.

    :param settings: the provider settings (a plain dict); the mock needs none.
    :param name: the provider name it is registered under.
    :param preset: unused; the mock has no presets.
    :returns: a :class:`hermes_mock.provider.MockProvider`.
    """
    from hermes_mock.provider import MockProvider

    return MockProvider(name=name)


SPEC = ProviderSpec(
    name="mock",
    summary="Deterministic offline replies and directives for testing hosts without a real model",
    factory=make_provider,
    requires_key=False,
    open_model_list=False,
)


@hookimpl
def hermes_model_providers() -> ProviderSpec:
    """Declare the ``mock`` provider.

    :returns: its spec.
    """
    return SPEC
