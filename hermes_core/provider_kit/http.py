"""The HTTP side of one provider instance: a loop-bound session, timeouts and error translation.

The kernel never imports the HTTP client library. :class:`HttpClient` is handed a loader that
returns the ``aiohttp`` module (the plugin imports it on the first request) and uses only what
that module offers: ``ClientSession``, ``ClientTimeout`` and its exception classes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from types import ModuleType
from typing import Any, TypeVar

from hermes_core.errors import ProviderError
from hermes_core.provider_kit.classify import ErrorFactory, StreamFaultReader
from hermes_core.provider_kit.messages import Redactor, url_secrets
from hermes_core.provider_kit.sse import StreamBroken, StreamStalled, UpstreamError, read_body

_ERROR_BODY_LIMIT = 64 * 1024

T = TypeVar("T")


class HttpClient:
    """Send one provider's requests and say in its words what went wrong.

    :param load_client: returns the ``aiohttp`` module; called on the first request only, so a
        provider used offline never imports it.
    :param errors: builds the messages.
    :param connect_timeout: seconds for the TCP/TLS connection.
    :param stall_timeout: seconds the upstream may stay silent before the call fails.
    :param proxy: an HTTP proxy URL for every request.
    """

    def __init__(
        self,
        load_client: Callable[[], ModuleType],
        errors: ErrorFactory,
        *,
        connect_timeout: float,
        stall_timeout: float,
        proxy: str | None = None,
    ) -> None:
        self._load_client = load_client
        self.errors = errors
        self.connect_timeout = connect_timeout
        self.stall_timeout = stall_timeout
        self.proxy = proxy
        self._session: Any = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def for_settings(
        cls,
        load_client: Callable[[], ModuleType],
        settings: Any,
        *,
        label: str,
        base_url: str,
        key_hint: str | None,
        stream_fault: StreamFaultReader,
        quota_codes: Collection[str] = (),
    ) -> HttpClient:
        """Build the client of a provider configured with ``provider_kit.HttpSettings``.

        Messages are labelled with ``label`` and never show the API key or the credentials of
        ``base_url``; the timeouts and proxy come from the settings.

        :param settings: an ``HttpSettings`` (or subclass) instance.
        :param key_hint: what to set when no key is configured (e.g. ``OPENAI_API_KEY``).
        :param stream_fault: the vendor's reading of an error received inside a stream.
        :param quota_codes: error codes of a 429 that mean an exhausted quota (not retried).
        """
        api_key = settings.api_key.get_secret_value() if settings.api_key else None
        errors = ErrorFactory(
            label,
            base_url,
            Redactor(api_key, *url_secrets(base_url)),
            key_hint,
            api_key is not None,
            stream_fault=stream_fault,
            quota_codes=quota_codes,
        )
        return cls(
            load_client,
            errors,
            connect_timeout=settings.timeout_s,
            stall_timeout=settings.stall_timeout_s,
            proxy=settings.proxy,
        )

    async def session(self) -> Any:
        """Return the ``ClientSession`` of the running loop, creating it when needed."""
        client = self._load_client()
        loop = asyncio.get_running_loop()
        # A session is bound to the loop it was made in; a provider reused from another loop
        # (tests, embedders calling asyncio.run twice) gets a fresh one.
        if self._session is None or self._session.closed or self._session_loop is not loop:
            self._session_loop = loop
            timeout = client.ClientTimeout(
                total=None,
                connect=self.connect_timeout,
                sock_connect=self.connect_timeout,
                sock_read=self.stall_timeout,
            )
            # No cap on pooled connections: each concurrent stream holds one (HTTP/1.1), and
            # the default cap of 100 would queue the 101st concurrent turn behind the others.
            # Concurrency is bounded upstream of here (e.g. the API's max_concurrent_runs).
            connector = client.TCPConnector(limit=0)
            self._session = client.ClientSession(timeout=timeout, connector=connector)
        return self._session

    @contextlib.asynccontextmanager
    async def post_stream(
        self,
        url: str,
        body: dict[str, Any] | bytes,
        headers: Mapping[str, str],
        *,
        reads_bounded: bool = False,
    ) -> AsyncIterator[Any]:
        """POST ``body`` as JSON and yield the response once its status is known to be a success.

        ``body`` is a JSON-ready dict, or JSON already encoded as UTF-8 bytes. With
        ``reads_bounded`` the caller bounds every read of the body itself (``iter_events`` or
        ``read_body`` with a stall timeout): the connection's own read timeout, which re-arms a
        timer on every packet, then stops once the status is in.

        Whatever fails inside the block becomes a ``ProviderError``: an HTTP error status, an
        :class:`UpstreamError`, a broken or stalled stream, a transport failure.
        """
        client = self._load_client()
        session = await self.session()
        try:
            response = await self._send(session, url, body, headers)
            async with response:
                if response.status >= 400:
                    raise await self.status_error(response)
                if reads_bounded:
                    _stop_read_timeout(response)
                yield response
        except UpstreamError as exc:
            raise self.errors.from_stream_error(exc.payload) from None
        except (StreamBroken, StreamStalled) as exc:
            raise self.network_error(exc) from None
        except (client.ClientError, TimeoutError, OSError) as exc:
            raise self.network_error(exc) from exc

    async def _send(
        self, session: Any, url: str, body: dict[str, Any] | bytes, headers: Mapping[str, str]
    ) -> Any:
        # The connect and read timeouts bound each step; this bounds them together, so even a
        # server that never reads the request body cannot hold the call forever.
        try:
            async with asyncio.timeout(self.connect_timeout + self.stall_timeout) as deadline:
                if isinstance(body, bytes):
                    sent = {**headers, "Content-Type": "application/json"}
                    return await session.post(url, data=body, headers=sent, proxy=self.proxy)
                return await session.post(url, json=body, headers=dict(headers), proxy=self.proxy)
        except TimeoutError:
            if not deadline.expired():
                raise
            raise StreamStalled() from None

    async def fetch_models(
        self,
        url: str,
        *,
        shown: str,
        parse: Callable[[bytes], T],
        headers: Mapping[str, str],
        timeout: float,
        params: Mapping[str, str] | None = None,
    ) -> T:
        """GET a model list within ``timeout`` seconds and return what ``parse`` makes of it.

        :param shown: the path named after the endpoint in messages (e.g. ``/models``).
        :param parse: reads the raw body; its ``ValueError`` is an unexpected answer, its
            :class:`StreamBroken` a network failure.
        :raises ProviderError: ``network`` when the call fails or takes too long, the mapped
            HTTP status, or ``upstream`` for an answer ``parse`` cannot read.
        """
        client = self._load_client()
        session = await self.session()
        try:
            async with asyncio.timeout(timeout):
                async with session.get(
                    url,
                    params=params,
                    headers=dict(headers),
                    proxy=self.proxy,
                    timeout=client.ClientTimeout(
                        total=timeout, sock_connect=min(timeout, self.connect_timeout)
                    ),
                ) as response:
                    if response.status >= 400:
                        raise await self.status_error(response)
                    raw = await read_body(response.content, self.stall_timeout)
        except ProviderError:
            raise
        except TimeoutError:
            raise self.errors.make(
                "network", f"no model list from {self.errors.url} within {timeout:g} s"
            ) from None
        except (client.ClientError, OSError, StreamBroken, StreamStalled) as exc:
            raise self.network_error(exc) from exc
        try:
            return parse(raw)
        except StreamBroken as exc:
            raise self.network_error(exc) from exc
        except ValueError as exc:
            raise self.errors.make(
                "upstream", f"unexpected answer from {self.errors.url}{shown} ({exc})"
            ) from None

    async def status_error(self, response: Any) -> ProviderError:
        """Return the error for a response with an HTTP error status, from the start of its body."""
        client = self._load_client()
        try:
            body = await read_body(response.content, self.stall_timeout, limit=_ERROR_BODY_LIMIT)
        except (client.ClientError, TimeoutError, OSError, StreamStalled):
            body = b""  # the status alone still says what went wrong
        return self.errors.from_status(response.status, response.reason or "", body, response.headers)

    def network_error(self, exc: BaseException) -> ProviderError:
        """Map a transport failure (refused, DNS, timeout, stall, cut stream) to ``network``."""
        client, url = self._load_client(), self.errors.url
        if isinstance(exc, StreamStalled):
            reason = f"the stream stalled (no data for {self.stall_timeout:g} s)"
        elif isinstance(exc, StreamBroken):
            reason = str(exc)
        elif isinstance(exc, client.ClientConnectorDNSError):
            reason = f"cannot resolve the host of {url}"
        elif isinstance(exc, client.ConnectionTimeoutError):
            reason = f"no connection to {url} within {self.connect_timeout:g} s"
        elif isinstance(exc, client.ClientConnectorError):
            os_error = exc.os_error
            if isinstance(os_error, ConnectionRefusedError):
                why = "connection refused"
            else:
                why = os_error.strerror or str(os_error) or type(os_error).__name__
            reason = f"cannot connect to {url} ({why})"
        elif isinstance(exc, client.SocketTimeoutError):
            reason = f"no answer from {url} (nothing received for {self.stall_timeout:g} s)"
        elif isinstance(exc, TimeoutError):
            reason = f"no answer from {url} in time"
        elif isinstance(exc, client.ServerDisconnectedError | client.ClientPayloadError):
            reason = "the connection was closed before the response was complete"
        elif isinstance(exc, client.InvalidURL | client.NonHttpUrlClientError):
            reason = f"invalid base_url {url!r}"
        else:
            reason = f"request to {url} failed ({type(exc).__name__}: {exc})"
        return self.errors.make("network", reason)

    async def aclose(self) -> None:
        """Close the session; the next request opens a new one."""
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


def _stop_read_timeout(response: Any) -> None:
    """Stop aiohttp's ``sock_read`` timer for the rest of ``response`` (its reader bounds each read).

    ``start_timeout`` re-arms the timer with the timeout now in force: none, so it is dropped.
    """
    connection = getattr(response, "connection", None)
    protocol = getattr(connection, "protocol", None)
    if protocol is not None and hasattr(protocol, "read_timeout") and hasattr(protocol, "start_timeout"):
        protocol.read_timeout = None
        protocol.start_timeout()
