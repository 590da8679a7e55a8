"""The ``anthropic`` provider object: streamed Messages API calls.

aiohttp is imported only when the first request is made, so building the provider (for its
offline model list) costs nothing. One ``ClientSession`` per instance is created lazily inside
the running loop and closed by :meth:`AnthropicProvider.aclose`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from hermes_anthropic.catalog import CLAUDE_MODELS, CLAUDE_WINDOW, merge_models, parse_models
from hermes_anthropic.decode import MessageStreamDecoder, UpstreamError
from hermes_anthropic.failures import ErrorFactory, Redactor, StreamBroken, StreamStalled, url_secrets
from hermes_anthropic.settings import AnthropicSettings
from hermes_anthropic.sse import iter_events
from hermes_anthropic.wire import build_body
from hermes_core import ChatRequest, Chunk, ModelInfo, ProviderError, ProviderPreset

if TYPE_CHECKING:
    import aiohttp

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
_ERROR_BODY_LIMIT = 64 * 1024


class AnthropicProvider:
    """A provider for the Anthropic Messages API.

    :param settings: validated settings.
    :param name: the provider name shown in errors.
    :param preset: supplies the default ``base_url`` when given.
    """

    def __init__(
        self, settings: AnthropicSettings, *, name: str, preset: ProviderPreset | None = None
    ) -> None:
        self.name = name
        self.settings = settings
        self.preset = preset
        self.base_url = (
            settings.base_url or (preset.base_url if preset else "") or ANTHROPIC_BASE_URL
        ).rstrip("/")
        # The base URL is the API root; accept one that already ends in the version too.
        self._api_root = self.base_url if self.base_url.endswith("/v1") else f"{self.base_url}/v1"
        self._api_key = settings.api_key.get_secret_value() if settings.api_key else None
        key_hint = (preset.env_vars.get("api_key") if preset else None) or "ANTHROPIC_API_KEY"
        redact = Redactor(self._api_key, *url_secrets(self.base_url))
        self._errors = ErrorFactory(name, self.base_url, redact, key_hint, self._api_key is not None)
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._probed: list[ModelInfo] = []

    @classmethod
    def from_settings(
        cls, settings: Any, *, name: str, preset: ProviderPreset | None = None
    ) -> AnthropicProvider:
        """Build a provider from settings given as a model instance, a mapping or ``None``."""
        if isinstance(settings, AnthropicSettings):
            validated = settings
        elif settings is None:
            validated = AnthropicSettings()
        elif isinstance(settings, Mapping):
            validated = AnthropicSettings.model_validate(dict(settings))
        else:
            validated = AnthropicSettings.model_validate(settings.model_dump())
        return cls(validated, name=name, preset=preset)

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {
            "Accept": accept,
            "anthropic-version": self.settings.anthropic_version,
            **self.settings.extra_headers,
        }
        if self._api_key:
            headers["x-api-key"] = self._api_key
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
        """Stream one Messages call; raise ``ProviderError`` on any failure.

        :param request: the call to make.
        :returns: text/thinking chunks as they arrive, tool calls as their blocks close,
            then usage and finish.
        """
        import aiohttp

        body = build_body(request, self.settings.max_tokens)
        session = await self._client()
        decoder = MessageStreamDecoder()
        try:
            response = await self._send(session, f"{self._api_root}/messages", body)
            async with response:
                if response.status >= 400:
                    raise await self._status_error(response)
                async for event in iter_events(response.content, self.settings.stall_timeout_s):
                    if not event.data.strip():
                        continue
                    try:
                        payload = json.loads(event.data)
                    except ValueError:
                        raise StreamBroken(
                            f"the upstream sent a malformed stream event: {event.data[:200]!r}"
                        ) from None
                    try:
                        chunks = decoder.feed(payload)
                    except ValueError as exc:
                        raise StreamBroken(f"the upstream sent a malformed stream event ({exc})") from None
                    for chunk in chunks:
                        yield chunk
                    if decoder.finished:
                        break
                if not decoder.finished:
                    raise StreamBroken("the stream ended before the response was complete")
        except UpstreamError as exc:
            raise self._errors.from_stream_error(exc.payload) from None
        except (StreamBroken, StreamStalled) as exc:
            raise self._network_error(exc) from None
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise self._network_error(exc) from exc

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
        import aiohttp

        session = await self._client()
        try:
            async with asyncio.timeout(timeout):
                async with session.get(
                    f"{self._api_root}/models",
                    params={"limit": "1000"},
                    headers=self._headers("application/json"),
                    proxy=self.settings.proxy,
                    timeout=aiohttp.ClientTimeout(
                        total=timeout, sock_connect=min(timeout, self.settings.timeout_s)
                    ),
                ) as response:
                    if response.status >= 400:
                        raise await self._status_error(response)
                    raw = await self._read_body(response, limit=None)
        except ProviderError:
            raise
        except TimeoutError:
            raise self._errors.make(
                "network", f"no model list from {self._errors.url} within {timeout:g} s"
            ) from None
        except (aiohttp.ClientError, OSError, StreamStalled) as exc:
            raise self._network_error(exc) from exc
        try:
            models = parse_models(json.loads(raw))
        except ValueError as exc:
            raise self._errors.make(
                "upstream", f"unexpected answer from {self._errors.url}/v1/models ({exc})"
            ) from None
        self._probed = models
        return models

    async def aclose(self) -> None:
        """Close the HTTP session; the provider opens a new one if used again."""
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()
