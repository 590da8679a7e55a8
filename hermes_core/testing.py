"""Helpers for tests and embedders: a kernel built from explicit plugins, a scriptable provider.

``make_kernel(*plugins)`` loads no entry points unless asked, uses in-memory storage and the
given settings, and is strict, so a broken test plugin fails loudly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any

from hermes_core.errors import ProviderError
from hermes_core.hookspecs import hookimpl
from hermes_core.kernel import Kernel
from hermes_core.providers import ChatRequest, Chunk, FinishChunk, ModelInfo, TextChunk
from hermes_core.records import ProviderSpec

Script = Callable[[ChatRequest], Iterable[Chunk] | AsyncIterator[Chunk]]


class FakeProvider:
    """A provider whose replies come from a function of the request (tests only).

    It is registered as provider ``fake`` and is never selectable as ``mock:*``.
    """

    def __init__(self, script: Script | None = None, models: Sequence[str] = ("model",)) -> None:
        self.script = script or (lambda req: [TextChunk("ok"), FinishChunk("stop")])
        self.models = [ModelInfo(m, context_window=8192) for m in models]
        self.requests: list[ChatRequest] = []

    async def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        self.requests.append(request)
        produced = self.script(request)
        if hasattr(produced, "__aiter__"):
            async for chunk in produced:
                yield chunk
        else:
            for chunk in produced:
                if isinstance(chunk, ProviderError):
                    raise chunk
                yield chunk

    async def list_models(self) -> list[ModelInfo]:
        return list(self.models)

    async def probe(self, timeout: float) -> list[ModelInfo]:
        return list(self.models)

    async def aclose(self) -> None:
        return None


class FakeProviderPlugin:
    """A plugin object contributing one ``FakeProvider`` under a provider name."""

    def __init__(self, provider: FakeProvider, name: str = "fake") -> None:
        self.provider = provider
        self.name = name
        self.hermes_plugin_name = f"{name}-provider"

    @hookimpl
    def hermes_model_providers(self) -> ProviderSpec:
        provider = self.provider
        return ProviderSpec(
            name=self.name,
            summary="test provider",
            factory=lambda settings, **kw: provider,
            requires_key=False,
            open_model_list=False,
        )


def make_kernel(
    *plugins: Any,
    entry_points: bool | Sequence[str] = False,
    settings: Mapping[str, Any] | None = None,
    store: Any = None,
) -> Kernel:
    """Build a strict kernel from explicit plugins, with in-memory storage by default."""
    merged: dict[str, Any] = {"storage": {"backend": "memory"}, "titles": {"refine": False}}
    for key, value in (settings or {}).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return Kernel.create(
        entry_points=entry_points, plugins=plugins, strict=True, settings=merged, store=store
    )


class MemorySettingsStore:
    """A :class:`~hermes_core.settings_store.SettingsStore` kept in memory."""

    config_path = None
    env_path = None

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        self.config: dict[str, Any] = dict(settings or {})
        self.env: dict[str, str] = {}

    def get(self, key: str) -> Any:
        node: Any = self.config
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def set(self, key: str, value: Any) -> None:
        node = self.config
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value

    def set_env(self, name: str, value: str) -> None:
        from hermes_core.errors import InvalidValue

        if "\n" in value:
            raise InvalidValue("value", message="a value cannot contain a newline")
        self.env[name] = value

    def load(self) -> Mapping[str, Any]:
        return dict(self.config)
