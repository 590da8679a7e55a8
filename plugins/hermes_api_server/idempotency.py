"""Idempotency of the API, in one place
(docs/reference/api-server.md#limits-idempotency-and-extra-fields, #post-v1runs).

* :class:`TurnKeys` — results of non-streamed chat and Responses requests, kept in the API
  server's records so that a retry reaching any instance (they share them on PostgreSQL) gets the
  first answer, and a twin arriving while the first is still computed elsewhere waits for it;
* :class:`IdempotencyCache` — the in-process layer below it: concurrent twins in one process
  share one computation;
* :class:`InFlight` — run creations under way by ``(principal, key)``, so a twin of a ``POST
  /v1/runs`` that is still being created waits for its run id (the durable record of finished
  creations is in the plugin's store);
* :func:`key_conflict` — the one 409 for a key reused with a different body.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_api_server.errors import ApiError

if TYPE_CHECKING:
    from hermes_api_server.records import ApiRecords

log = logging.getLogger("hermes.api.idempotency")
MAX_ENTRIES = 1000
TTL_S = 300.0
#: How long a twin waits for a computation under way on another instance before a 409.
IN_PROGRESS_WAIT_S = 60.0
#: How often the computing instance marks its claim alive, and when a silent claim counts as dead.
CLAIM_TOUCH_S = 5.0
CLAIM_STALE_S = 20.0


def key_conflict() -> ApiError:
    """Return the 409 for an ``Idempotency-Key`` sent again with a different body."""
    return ApiError(
        409,
        "idempotency_key_conflict",
        "Idempotency-Key was used with a different body",
        param="Idempotency-Key",
    )


def key_in_progress(waited_s: float) -> ApiError:
    """Return the 409 for a key whose first request is still being answered elsewhere."""
    return ApiError(
        409,
        "idempotency_key_in_progress",
        f"A request with this Idempotency-Key is still being answered (waited {waited_s:g} s); "
        "retry it to get its result",
        param="Idempotency-Key",
        headers={"Retry-After": "1", "X-Should-Retry": "true"},
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


class TurnKeys:
    """Results of non-streamed turns by (principal, route, key), durable in the API server's records.

    The first request claims the key in the records, computes, and stores its result; a retry
    (on any instance sharing the records, within :data:`TTL_S`) gets that result back. A twin that
    finds the claim unfinished polls the record for up to :data:`IN_PROGRESS_WAIT_S`, then answers
    409 ``idempotency_key_in_progress``. A claim whose instance died (not touched for
    :data:`CLAIM_STALE_S`) is taken over; a failed computation releases its claim, so a retry
    computes again.
    """

    def __init__(self, store: ApiRecords, wait_s: float = IN_PROGRESS_WAIT_S, ttl_s: float = TTL_S) -> None:
        self.store = store
        self.wait_s = wait_s
        self.ttl_s = ttl_s
        self.local = IdempotencyCache(ttl_s=ttl_s)

    async def run(
        self, key: tuple[str, str, str], fingerprint: str, compute: Callable[[], Awaitable[Any]]
    ) -> tuple[Any, bool]:
        """Return ``(result, replayed)``; compute once per key and fingerprint across instances.

        :raises ApiError: 409 ``idempotency_key_conflict`` for a different body, 409
            ``idempotency_key_in_progress`` when the first request is still being answered.
        """

        async def once() -> tuple[Any, bool]:
            return await self._once(key, fingerprint, compute)

        (result, stored), replayed = await self.local.run(key, fingerprint, once)
        return result, replayed or stored

    async def _once(
        self, key: tuple[str, str, str], fingerprint: str, compute: Callable[[], Awaitable[Any]]
    ) -> tuple[Any, bool]:
        started = time.monotonic()
        pause = 0.05
        while True:
            found = await self.store.claim_key(*key, fingerprint, self.ttl_s, CLAIM_STALE_S)
            if found is None:
                break
            if found[0] != fingerprint:
                raise key_conflict()
            if found[1] is not None:
                return found[1], True
            if time.monotonic() - started >= self.wait_s:
                raise key_in_progress(self.wait_s)
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)
        keeper = asyncio.create_task(self._touch(key), name="hermes-api-idempotency-claim")
        try:
            result = await compute()
        except BaseException:
            keeper.cancel()
            with contextlib.suppress(Exception):
                await asyncio.shield(self.store.drop_key(*key))
            raise
        keeper.cancel()
        try:
            await self.store.finish_key(*key, result)
        except Exception:
            # The answer is here: give it; a retry elsewhere may compute again.
            log.warning("storing the result of an Idempotency-Key failed", exc_info=True)
        return result, False

    async def _touch(self, key: tuple[str, str, str]) -> None:
        while True:
            await asyncio.sleep(CLAIM_TOUCH_S)
            try:
                await self.store.touch_key(*key)
            except Exception:
                log.warning("refreshing an Idempotency-Key claim failed", exc_info=True)


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
