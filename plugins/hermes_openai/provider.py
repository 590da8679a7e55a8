"""The ``openai`` provider object: streamed chat completions against one endpoint.

aiohttp is imported only when the first request is made, so building the provider (for its
offline model list) costs nothing. One ``ClientSession`` per instance is created lazily inside
the running loop and closed by :meth:`OpenAIProvider.aclose`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from hermes_core import ChatRequest, Chunk, ModelInfo, ProviderError, ProviderPreset
from hermes_openai.catalog import OPENAI_MODELS, merge_models, parse_models
from hermes_openai.decode import ChatStreamDecoder, UpstreamError
from hermes_openai.failures import ErrorFactory, Redactor, StreamBroken, StreamStalled, url_secrets
from hermes_openai.settings import ModelEntry, OpenAISettings
from hermes_openai.sse import iter_events
from hermes_openai.wire import Dialect, build_body

if TYPE_CHECKING:
    import aiohttp

OPENAI_BASE_URL = "https://api.openai.com/v1"
_ERROR_BODY_LIMIT = 64 * 1024


class OpenAIProvider:
    """A provider for one OpenAI-compatible endpoint.

    :param settings: validated settings.
    :param name: the provider name (``openai``, a preset such as ``ollama``, or a custom name).
    :param preset: the preset or custom entry supplying the default ``base_url``.
    """

    def __init__(self, settings: OpenAISettings, *, name: str, preset: ProviderPreset | None = None) -> None:
        self.name = name
        self.preset = preset
        self.settings = settings
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
        redact = Redactor(self._api_key, *url_secrets(self.base_url))
        self._errors = ErrorFactory(name, self.base_url, redact, key_hint, self._api_key is not None)
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._probed: list[ModelInfo] = []

    @classmethod
    def from_settings(
        cls, settings: Any, *, name: str, preset: ProviderPreset | None = None
    ) -> OpenAIProvider:
        """Build a provider from settings given as a model instance, a mapping or ``None``."""
        if isinstance(settings, OpenAISettings):
            validated = settings
        elif settings is None:
            validated = OpenAISettings()
        elif isinstance(settings, Mapping):
            validated = OpenAISettings.model_validate(dict(settings))
        else:
            validated = OpenAISettings.model_validate(settings.model_dump())
        return cls(validated, name=name, preset=preset)

    @property
    def official(self) -> bool:
        """Whether this is OpenAI's own API (which has the built-in model list)."""
        return self.dialect == "openai"

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Accept": accept, **self.settings.extra_headers}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    async def _client(self) -> aiohttp.ClientSession:
        import aiohttp

        loop = asyncio.get_running_loop()
        # A session is bound to the loop it was made in; a provider reused from another loop
        # (tests, embedders calling asyncio.run twice) gets a fresh one.
        if self._session is None or self._session.closed or self._session_loop is not loop:
            self._session_loop = loop
            timeout = aiohttp.ClientTimeout(
                total=None,
                connect=self.settings.timeout_s,
                sock_connect=self.settings.timeout_s,
                sock_read=self.settings.stall_timeout_s,
            )
            self._session = aiohttp.ClientSession(timeout=timeout)
        return self._session

    async def _send(
        self, session: aiohttp.ClientSession, url: str, body: dict[str, Any]
    ) -> aiohttp.ClientResponse:
        """POST ``body`` and return the response once its headers are in.

        The connect and read timeouts bound each step; this bounds them together, so even a
        server that never reads the request body cannot hold the call forever.
        """
        limit = self.settings.timeout_s + self.settings.stall_timeout_s
        try:
            async with asyncio.timeout(limit) as deadline:
                return await session.post(
                    url, json=body, headers=self._headers("text/event-stream"), proxy=self.settings.proxy
                )
        except TimeoutError:
            if not deadline.expired():
                raise
            raise StreamStalled() from None

    def _network_error(self, exc: BaseException) -> ProviderError:
        return self._errors.from_exception(
            exc, connect_timeout=self.settings.timeout_s, stall_timeout=self.settings.stall_timeout_s
        )

    async def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        """Stream one chat completion; raise ``ProviderError`` on any failure.

        :param request: the call to make.
        :returns: text/reasoning chunks as they arrive, then tool calls, usage and finish.
        """
        import aiohttp

        body = build_body(request, self.dialect)
        session = await self._client()
        decoder = ChatStreamDecoder()
        try:
            response = await self._send(session, f"{self.base_url}/chat/completions", body)
            async with response:
                if response.status >= 400:
                    raise await self._status_error(response)
                if response.content_type == "application/json":
                    # A server that ignores stream=true answers with one whole completion.
                    payload = await self._read_json(response)
                    for chunk in decoder.feed(payload):
                        yield chunk
                else:
                    async for chunk in self._decode_events(response, decoder):
                        yield chunk
                for chunk in decoder.finish():
                    yield chunk
        except UpstreamError as exc:
            raise self._errors.from_stream_error(exc.payload) from None
        except (StreamBroken, StreamStalled) as exc:
            raise self._network_error(exc) from None
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise self._network_error(exc) from exc

    async def _decode_events(
        self, response: aiohttp.ClientResponse, decoder: ChatStreamDecoder
    ) -> AsyncIterator[Chunk]:
        done = False
        async for event in iter_events(response.content, self.settings.stall_timeout_s):
            data = event.data.strip()
            if data == "[DONE]":
                done = True
                break
            if not data:
                continue
            try:
                payload = json.loads(data)
            except ValueError:
                raise StreamBroken(f"the upstream sent a malformed stream event: {data[:200]!r}") from None
            if event.event == "error":
                raise UpstreamError(payload)
            try:
                chunks = decoder.feed(payload)
            except ValueError as exc:
                raise StreamBroken(f"the upstream sent a malformed stream event ({exc})") from None
            for chunk in chunks:
                yield chunk
        if not done and not decoder.finished:
            raise StreamBroken("the stream ended before the response was complete")

    async def _read_json(self, response: aiohttp.ClientResponse) -> Any:
        raw = await self._read_body(response, limit=None)
        try:
            return json.loads(raw)
        except ValueError:
            raise StreamBroken("the upstream answered with malformed JSON") from None

    async def _read_body(self, response: aiohttp.ClientResponse, limit: int | None) -> bytes:
        chunks = bytearray()
        while limit is None or len(chunks) < limit:
            try:
                async with asyncio.timeout(self.settings.stall_timeout_s):
                    data = await response.content.readany()
            except TimeoutError:
                raise StreamStalled() from None
            if not data:
                break
            chunks.extend(data)
        return bytes(chunks if limit is None else chunks[:limit])

    async def _status_error(self, response: aiohttp.ClientResponse) -> ProviderError:
        import aiohttp

        try:
            body = await self._read_body(response, limit=_ERROR_BODY_LIMIT)
        except (aiohttp.ClientError, TimeoutError, OSError, StreamStalled):
            body = b""  # the status alone still says what went wrong
        return self._errors.from_status(response.status, response.reason or "", body, response.headers)

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
        import aiohttp

        session = await self._client()
        try:
            async with asyncio.timeout(timeout):
                async with session.get(
                    f"{self.base_url}/models",
                    headers=self._headers("application/json"),
                    proxy=self.settings.proxy,
                    timeout=aiohttp.ClientTimeout(
                        total=timeout, sock_connect=min(timeout, self.settings.timeout_s)
                    ),
                ) as response:
                    if response.status >= 400:
                        raise await self._status_error(response)
                    payload = await self._read_json(response)
        except ProviderError:
            raise
        except TimeoutError:
            raise self._errors.make(
                "network", f"no model list from {self._errors.url} within {timeout:g} s"
            ) from None
        except (aiohttp.ClientError, OSError, StreamBroken, StreamStalled) as exc:
            raise self._network_error(exc) from exc
        try:
            models = parse_models(payload, official=self.official)
        except ValueError as exc:
            raise self._errors.make(
                "upstream", f"unexpected answer from {self._errors.url}/models ({exc})"
            ) from None
        self._probed = models
        return models

    async def aclose(self) -> None:
        """Close the HTTP session; the provider opens a new one if used again."""
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


def _entry_info(entry: ModelEntry) -> ModelInfo:
    return ModelInfo(entry.id, entry.context_window, entry.vision)
