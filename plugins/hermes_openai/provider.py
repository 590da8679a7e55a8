"""The ``openai`` provider object: streamed chat completions against one endpoint.

Building the provider (for its offline model list) costs nothing: the shared
``provider_kit.HttpClient`` imports aiohttp when the first request is made, creates one
``ClientSession`` per event loop and closes it in :meth:`OpenAIProvider.aclose`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from hermes_core import ChatRequest, Chunk, ModelInfo, ProviderPreset, provider_kit
from hermes_openai.catalog import OPENAI_MODELS, merge_models, parse_models
from hermes_openai.decode import ChatStreamDecoder
from hermes_openai.failures import QUOTA_CODES, stream_fault
from hermes_openai.plugin import OPENAI_BASE_URL
from hermes_openai.settings import ModelEntry, OpenAISettings
from hermes_openai.wire import Dialect, encode_body


def _aiohttp() -> ModuleType:
    """Return the aiohttp module; ``provider_kit.HttpClient`` calls this on the first request."""
    import aiohttp

    return aiohttp


class OpenAIProvider:
    """A provider for one OpenAI-compatible endpoint.

    :param settings: validated settings, or a mapping (or ``None``) to validate into them.
    :param name: the provider name (``openai``, a preset such as ``ollama``, or a custom name).
    :param preset: the preset or custom entry supplying the default ``base_url``.
    """

    def __init__(self, settings: Any, *, name: str, preset: ProviderPreset | None = None) -> None:
        self.name = name
        self.preset = preset
        self.settings = settings = provider_kit.coerce_settings(OpenAISettings, settings)
        self.base_url = (settings.base_url or (preset.base_url if preset else "") or OPENAI_BASE_URL).rstrip(
            "/"
        )
        host = (urlsplit(self.base_url).hostname or "").lower()
        self.dialect: Dialect
        if preset is None and host == "api.openai.com":
            self.dialect = "openai"
        elif host == "openrouter.ai":
            self.dialect = "openrouter"
        else:
            self.dialect = "generic"
        self._api_key = settings.api_key.get_secret_value() if settings.api_key else None
        key_hint = preset.env_vars.get("api_key") if preset else "OPENAI_API_KEY"
        self._http = provider_kit.HttpClient.for_settings(
            _aiohttp,
            settings,
            label=name,
            base_url=self.base_url,
            key_hint=key_hint,
            stream_fault=stream_fault,
            quota_codes=QUOTA_CODES,
        )
        self._probed: list[ModelInfo] = []

    @property
    def official(self) -> bool:
        """Whether this is OpenAI's own API (which has the built-in model list)."""
        return self.dialect == "openai"

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Accept": accept, **self.settings.extra_headers}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    async def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        """Stream one chat completion; raise ``ProviderError`` on any failure.

        :param request: the call to make.
        :returns: text/reasoning chunks as they arrive, then tool calls, usage and finish.
        """
        body = encode_body(request, self.dialect)
        decoder = ChatStreamDecoder()
        url = f"{self.base_url}/chat/completions"
        headers = self._headers("text/event-stream")
        async with self._http.post_stream(url, body, headers, reads_bounded=True) as response:
            if response.content_type == "application/json":
                # A server that ignores stream=true answers with one whole completion.
                raw = await provider_kit.read_body(response.content, self.settings.stall_timeout_s)
                for chunk in provider_kit.decode_event(raw.decode("utf-8", "replace"), decoder.feed):
                    yield chunk
            else:
                async for chunk in self._decode_events(response.content, decoder):
                    yield chunk
            for chunk in decoder.finish():
                yield chunk

    async def _decode_events(
        self, content: provider_kit.ByteStream, decoder: ChatStreamDecoder
    ) -> AsyncIterator[Chunk]:
        done = False
        # One stall timer for the whole body (the session's per-packet sock_read is stopped).
        async for event in provider_kit.iter_events(content, self.settings.stall_timeout_s):
            data = event.data.strip()
            if data == "[DONE]":
                done = True
                break
            if not data:
                continue
            feed = (
                decoder.feed
                if event.event == "message"
                else functools.partial(decoder.feed_event, event.event)
            )
            for chunk in provider_kit.decode_event(data, feed):
                yield chunk
        if not done and not decoder.finished:
            raise provider_kit.StreamBroken("the stream ended before the response was complete")

    async def list_models(self) -> list[ModelInfo]:
        """Return the models known without the network.

        OpenAI itself: the built-in list. Every endpoint: the preset's models, the ``models``
        setting and the result of the last successful :meth:`probe`.
        """
        configured = [
            ModelInfo(entry) if isinstance(entry, str) else _entry_info(entry)
            for entry in self.settings.models
        ]
        builtin = OPENAI_MODELS if self.official else (self.preset.models if self.preset else ())
        return merge_models(builtin, configured, self._probed)

    async def probe(self, timeout: float) -> list[ModelInfo]:
        """Fetch the live model list from ``GET {base_url}/models``.

        :param timeout: seconds for the whole request.
        :returns: the models the upstream lists (also cached for :meth:`list_models`).
        """
        self._probed = await self._http.fetch_models(
            f"{self.base_url}/models",
            shown="/models",
            parse=lambda raw: parse_models(_json(raw), official=self.official),
            headers=self._headers("application/json"),
            timeout=timeout,
        )
        return self._probed

    async def aclose(self) -> None:
        """Close the HTTP session; the provider opens a new one if used again."""
        await self._http.aclose()


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise provider_kit.StreamBroken("the upstream answered with malformed JSON") from None


def _entry_info(entry: ModelEntry) -> ModelInfo:
    return ModelInfo(entry.id, entry.context_window, entry.vision)
