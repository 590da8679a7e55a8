"""The ``anthropic`` provider object: streamed Messages API calls.

Building it (for the offline Claude list) opens nothing and imports no aiohttp; the shared
``provider_kit.HttpClient`` imports it on the first request and keeps one session per event loop
until :meth:`AnthropicProvider.aclose`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from hermes_anthropic.catalog import CLAUDE_MODELS, CLAUDE_WINDOW, merge_models, parse_models
from hermes_anthropic.decode import MessageStreamDecoder
from hermes_anthropic.failures import stream_fault
from hermes_anthropic.plugin import ANTHROPIC_BASE_URL
from hermes_anthropic.settings import AnthropicSettings
from hermes_anthropic.wire import build_body
from hermes_core import ChatRequest, Chunk, ModelInfo, ProviderPreset, provider_kit


def _aiohttp() -> ModuleType:
    """Return the aiohttp module; ``provider_kit.HttpClient`` calls this on the first request."""
    import aiohttp

    return aiohttp


class AnthropicProvider:
    """A provider for the Anthropic Messages API.

    :param settings: validated settings, or a mapping (or ``None``) to validate into them.
    :param name: the provider name shown in errors.
    :param preset: supplies the default ``base_url`` when given.
    """

    def __init__(self, settings: Any, *, name: str, preset: ProviderPreset | None = None) -> None:
        self.name = name
        self.settings = settings = provider_kit.coerce_settings(AnthropicSettings, settings)
        self.preset = preset
        self.base_url = (
            settings.base_url or (preset.base_url if preset else "") or ANTHROPIC_BASE_URL
        ).rstrip("/")
        # The base URL is the API root; accept one that already ends in the version too.
        self._api_root = self.base_url if self.base_url.endswith("/v1") else f"{self.base_url}/v1"
        self._api_key = settings.api_key.get_secret_value() if settings.api_key else None
        key_hint = (preset.env_vars.get("api_key") if preset else None) or "ANTHROPIC_API_KEY"
        self._http = provider_kit.HttpClient.for_settings(
            _aiohttp,
            settings,
            label=name,
            base_url=self.base_url,
            key_hint=key_hint,
            stream_fault=stream_fault,
        )
        self._probed: list[ModelInfo] = []

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {
            "Accept": accept,
            "anthropic-version": self.settings.anthropic_version,
            **self.settings.extra_headers,
        }
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    async def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        """Stream one Messages call; raise ``ProviderError`` on any failure.

        :param request: the call to make.
        :returns: text/thinking chunks as they arrive, tool calls as their blocks close,
            then usage and finish.
        """
        body = build_body(request, self.settings.max_tokens)
        decoder = MessageStreamDecoder()
        url = f"{self._api_root}/messages"
        headers = self._headers("text/event-stream")
        async with self._http.post_stream(url, body, headers, reads_bounded=True) as response:
            async for event in provider_kit.iter_events(response.content, self.settings.stall_timeout_s):
                if not event.data.strip():
                    continue
                for chunk in provider_kit.decode_event(event.data, decoder.feed):
                    yield chunk
                if decoder.finished:
                    break
            if not decoder.finished:
                raise provider_kit.StreamBroken("the stream ended before the response was complete")

    async def list_models(self) -> list[ModelInfo]:
        """Return the built-in Claude models, the ``models`` setting and the last probe."""
        configured = [
            ModelInfo(entry, CLAUDE_WINDOW, True)
            if isinstance(entry, str)
            else ModelInfo(entry.id, entry.context_window or CLAUDE_WINDOW, entry.vision)
            for entry in self.settings.models
        ]
        return merge_models(CLAUDE_MODELS, configured, self._probed)

    async def probe(self, timeout: float) -> list[ModelInfo]:
        """Fetch the live model list from ``GET /v1/models``.

        :param timeout: seconds for the whole request.
        :returns: the models the API lists (also cached for :meth:`list_models`).
        """
        self._probed = await self._http.fetch_models(
            f"{self._api_root}/models",
            shown="/v1/models",
            parse=lambda raw: parse_models(json.loads(raw)),
            params={"limit": "1000"},
            headers=self._headers("application/json"),
            timeout=timeout,
        )
        return self._probed

    async def aclose(self) -> None:
        """Close the HTTP session; the provider opens a new one if used again."""
        await self._http.aclose()
