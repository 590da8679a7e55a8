"""Waiting in tests without guessing: poll for the event a test stands on, scale every time limit.

Tests never sleep to force an order; they wait for what the sleep stood for with
:func:`eventually` (async) or :func:`eventually_sync` (threads, subprocesses). Every wall-clock
upper bound a test asserts ("cancelled within 1 s") goes through :func:`scaled`, and so do the
deadlines of the waits, so one variable stretches them all on a slow or loaded machine:

    HERMES_TEST_TIME_SCALE=3 .venv/bin/pytest

The default is 1. The per-test timeout of pytest-timeout is scaled the same way (``conftest.py``).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def _read_scale() -> float:
    raw = os.environ.get("HERMES_TEST_TIME_SCALE", "").strip()
    if not raw:
        return 1.0
    try:
        value = float(raw)
    except ValueError:
        raise RuntimeError(f"HERMES_TEST_TIME_SCALE={raw!r} is not a number") from None
    if value <= 0:
        raise RuntimeError(f"HERMES_TEST_TIME_SCALE={raw!r} must be greater than 0")
    return value


TIME_SCALE = _read_scale()
"""The factor every wall-clock limit in the tests is multiplied by (``HERMES_TEST_TIME_SCALE``)."""


def scaled(seconds: float) -> float:
    """Return ``seconds`` stretched by :data:`TIME_SCALE`: use it for every upper bound on time."""
    return seconds * TIME_SCALE


async def eventually(
    condition: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = 10.0,
    interval: float = 0.01,
    what: str = "the condition",
) -> T:
    """Poll ``condition`` until it returns something truthy and return that value.

    :param condition: a function or coroutine function; it is called again until truthy.
    :param timeout: seconds before giving up (scaled by :data:`TIME_SCALE`).
    :param interval: seconds between polls.
    :param what: what is awaited, for the failure message.
    :raises AssertionError: the condition did not hold within the timeout.
    """
    deadline = time.monotonic() + scaled(timeout)
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} did not happen within {scaled(timeout):.1f} s (last: {value!r})")
        await asyncio.sleep(interval)


def eventually_sync(
    condition: Callable[[], T], *, timeout: float = 10.0, interval: float = 0.01, what: str = "the condition"
) -> T:
    """Blocking twin of :func:`eventually`, for code outside an event loop (threads, processes)."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} did not happen within {scaled(timeout):.1f} s (last: {value!r})")
        time.sleep(interval)


async def within_one_budget_minute(seconds: float = 12.0) -> None:
    """Return once at least ``seconds`` of the current per-minute budget window are left.

    Per-minute budgets count in fixed windows of the clock's minutes (``budget_ledger.WINDOW_S``):
    a test that charges a request and expects the next one refused fails when a new minute starts
    in between. This waits for the next minute when the current one is nearly over (at most
    ``seconds``), so such a test starts with room. Not scaled: it bounds the wait, not a result.
    """
    left = 60.0 - time.time() % 60.0
    if left < seconds:
        await asyncio.sleep(left + 0.05)
