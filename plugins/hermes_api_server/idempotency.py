"""The in-memory idempotency cache of non-streamed chat and Responses requests
(docs/reference/api-server.md#limits-idempotency-and-extra-fields)."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from hermes_api_server.errors import ApiError

MAX_ENTRIES = 1000
TTL_S = 300.0


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
                raise ApiError(
                    409,
                    "idempotency_key_conflict",
                    "Idempotency-Key was used with a different body",
                    param="Idempotency-Key",
                )
            return await asyncio.shield(entry.future), True
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._entries[key] = _Entry(fingerprint, future, time.monotonic())
        try:
            result = await compute()
        except BaseException as exc:
            # A failure is not cached: the next attempt computes again.
            self._entries.pop(key, None)
            if not future.done():
                if isinstance(exc, Exception):
                    future.set_exception(exc)
                else:
                    future.cancel()
                future.exception() if not future.cancelled() else None
            raise
        future.set_result(result)
        return result, False
