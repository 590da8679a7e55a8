"""Idempotency of the API, in one place
(docs/reference/api-server.md#limits-idempotency-and-extra-fields, #post-v1runs).

* :class:`IdempotencyCache` — the in-memory result cache of non-streamed chat and Responses
  requests: concurrent twins share one computation;
* :class:`InFlight` — run creations under way by ``(principal, key)``, so a twin of a ``POST
  /v1/runs`` that is still being created waits for its run id (the durable record of finished
  creations is in the plugin's store);
* :func:`key_conflict` — the one 409 for a key reused with a different body.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hermes_api_server.errors import ApiError

MAX_ENTRIES = 1000
TTL_S = 300.0


def key_conflict() -> ApiError:
    """Return the 409 for an ``Idempotency-Key`` sent again with a different body."""
    return ApiError(
        409,
        "idempotency_key_conflict",
        "Idempotency-Key was used with a different body",
        param="Idempotency-Key",
    )


def _settle_failed(future: asyncio.Future[Any], exc: BaseException) -> None:
    """Fail a shared future with ``exc`` (cancel it for a non-Exception) and mark it retrieved."""
    if future.done():
        return
    if isinstance(exc, Exception):
        future.set_exception(exc)
        future.exception()
    else:
        future.cancel()


@dataclass(slots=True)
class _Entry:
    fingerprint: str
    future: asyncio.Future[Any]
    created: float


class IdempotencyCache:
    """Remember results by (principal, route, key); concurrent twins share one computation."""

    def __init__(self, max_entries: int = MAX_ENTRIES, ttl_s: float = TTL_S) -> None:
        self._entries: OrderedDict[tuple[str, str, str], _Entry] = OrderedDict()
        self._max = max_entries
        self._ttl = ttl_s

    def _sweep(self) -> None:
        now = time.monotonic()
        while self._entries:
            key, entry = next(iter(self._entries.items()))
            if now - entry.created < self._ttl and len(self._entries) <= self._max:
                break
            del self._entries[key]

    async def run(
        self, key: tuple[str, str, str], fingerprint: str, compute: Callable[[], Awaitable[Any]]
    ) -> tuple[Any, bool]:
        """Return ``(result, replayed)``; compute once per key and fingerprint.

        :raises ApiError: 409 ``idempotency_key_conflict`` for a different body.
        """
        self._sweep()
        entry = self._entries.get(key)
        if entry is not None:
            if entry.fingerprint != fingerprint:
                raise key_conflict()
            return await asyncio.shield(entry.future), True
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._entries[key] = _Entry(fingerprint, future, time.monotonic())
        try:
            result = await compute()
        except BaseException as exc:
            # A failure is not cached: the next attempt computes again.
            self._entries.pop(key, None)
            _settle_failed(future, exc)
            raise
        future.set_result(result)
        return result, False


class InFlight:
    """Creations under way, by ``(principal, key)``: a twin waits for the first one's id."""

    def __init__(self) -> None:
        self._pending: dict[tuple[str, str], asyncio.Future[str]] = {}
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def serial(self, key: tuple[str, str] | None) -> AsyncIterator[None]:
        """Run the block alone among the requests that carry the same ``key``.

        The replay check and the creation it decides on must not interleave with a twin's: a
        twin that looked up the key before the first request had claimed or stored it would
        create a second run. ``key`` None (no ``Idempotency-Key``) serialises nothing.
        """
        if key is None:
            yield
            return
        lock, users = self._locks.get(key) or (asyncio.Lock(), 0)
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    async def wait(self, key: tuple[str, str]) -> str | None:
        """Return the id the creation under ``key`` produced, or None when none is under way.

        :raises Exception: what the creation failed with.
        """
        pending = self._pending.get(key)
        if pending is None:
            return None
        return await asyncio.shield(pending)

    @contextlib.contextmanager
    def claim(self, key: tuple[str, str] | None) -> Iterator[Callable[[str], None]]:
        """Mark a creation under way for the block; call the yielded function with its id.

        A failure of the block is handed to waiting twins; the claim ends with the block.
        ``key`` None (no ``Idempotency-Key``) claims nothing.
        """
        if key is None:
            yield lambda _id: None
            return
        pending: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[key] = pending
        try:
            yield pending.set_result
        except BaseException as exc:
            _settle_failed(pending, exc if isinstance(exc, Exception) else RuntimeError("cancelled"))
            raise
        finally:
            self._pending.pop(key, None)
