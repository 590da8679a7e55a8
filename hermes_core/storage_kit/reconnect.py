"""Recovering from a database server that dropped its pooled connections (a restart, a
fail-over): what a pooled backend does the same way, whatever its driver.

* :class:`PoolCheck` — after the first dropped connection, one background check of the idle
  connections (the backend passes its pool's own check); calls made meanwhile wait for it, so they
  do not each fail on another dead connection;
* :func:`retried` — run a read again while it fails with the backend's "connection lost" error:
  every dead connection is discarded as it fails, so ``pool size + 1`` tries reach a fresh one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class PoolCheck:
    """At most one running check of a pool's idle connections."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """Whether a check is under way (cheap: callers test it on every call)."""
        return self._task is not None and not self._task.done()

    def start(self, check: Callable[[], Awaitable[None]], name: str) -> None:
        """Start ``check()`` in the background unless one is running already."""
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(_run(check), name=name)

    async def settle(self, timeout_s: float) -> None:
        """Wait, at most ``timeout_s``, for a running check to finish."""
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=timeout_s)

    async def close(self) -> None:
        """Stop a running check (the pool is closing)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def _run(check: Callable[[], Awaitable[None]]) -> None:
    await check()


async def retried(op: Callable[[], Awaitable[T]], lost: type[BaseException], attempts: int) -> T:
    """Return ``await op()``, calling it again (up to ``attempts`` calls) while it raises ``lost``."""
    for _ in range(attempts - 1):
        try:
            return await op()
        except lost:
            continue
    return await op()
