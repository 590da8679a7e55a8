"""A base class for provider objects: the defaults every simple provider writes the same way
(docs/writing-providers.md).

A subclass declares its offline models once, as the class attribute ``models``, and writes
:meth:`ProviderBase.stream`; listing, probing and closing have defaults it may override.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import ClassVar

from hermes_core.providers import ChatRequest, Chunk, ModelInfo


class ProviderBase:
    """Defaults for :class:`hermes_core.Provider`: a static model list, probing it, closing nothing.

    :cvar models: the models known without the network, declared once per class.
    """

    models: ClassVar[tuple[ModelInfo, ...]] = ()

    def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        """Stream one model call; every subclass writes this (an ``async def`` with ``yield``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement stream(request)")

    async def list_models(self) -> list[ModelInfo]:
        """Return :attr:`models` (a fresh list, so a caller may change it)."""
        return list(self.models)

    async def probe(self, timeout: float) -> list[ModelInfo]:
        """Return :meth:`list_models`: a provider without an upstream list has nothing to ask.

        Override it to fetch the live list (within ``timeout`` seconds, raising ``ProviderError``).
        """
        return await self.list_models()

    async def aclose(self) -> None:
        """Release nothing; override it when the provider holds connections."""
