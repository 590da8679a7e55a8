"""The provider directory transports read: which providers exist and what they offer.

``kernel.providers`` is a :class:`ProviderDirectory`. It answers questions about configured
providers without handing out the provider instances themselves (those stay with the kernel).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_core.models import ProviderHub
    from hermes_core.providers import ModelInfo


class ProviderDirectory:
    """Read-only view of the kernel's providers."""

    __slots__ = ("_hub",)

    def __init__(self, hub: ProviderHub) -> None:
        self._hub = hub

    def has(self, name: str) -> bool:
        """Tell whether a provider with this name is configured."""
        return self._hub.has(name)

    def names(self) -> list[str]:
        """The configured provider names."""
        return self._hub.names()

    async def offline_models(self, name: str) -> list[ModelInfo]:
        """The models ``name`` lists without a network call (may be empty)."""
        return await self._hub.offline_models(name)

    def missing_key_hint(self, name: str) -> str | None:
        """What stops provider ``name`` answering (a missing key), or None."""
        return self._hub.missing_key_hint(name)

    def is_user_defined(self, name: str) -> bool:
        """Whether ``name`` is a user-defined endpoint (a custom entry or a changed ``base_url``),
        whose model list only a probe can tell."""
        return self._hub.is_custom(name)
