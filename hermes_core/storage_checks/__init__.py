"""The storage conformance suite: what every storage backend must do, as named checks
(docs/testing-plugins.md#storage-backends).

Each :class:`StorageCheck` is a coroutine taking a :class:`StorageTarget`, which makes storages
of the backend under test on a database of that check's own; it raises ``AssertionError``
saying what the backend did wrong. The suite is framework-neutral; with pytest::

    from hermes_core.testing import storage_checks

    @pytest.mark.parametrize("check", storage_checks(), ids=str)
    async def test_conformance(check, tmp_path):
        await check.run(MyTarget(tmp_path / "db"))

Areas: ``sessions``, ``rows``, ``leases``, ``records``, ``event_log`` (the backend contract)
and ``kernel`` (the kernel's event log running on the backend: numbering, restart, a crash,
retention).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from hermes_core.storage import Storage

AREAS = ("sessions", "rows", "leases", "records", "event_log", "kernel")


class StorageTarget(Protocol):
    """How the suite gets storages of the backend under test.

    ``make()`` returns an unopened storage on this target's database, empty when the target
    was made. Calling it again returns another storage on the *same* database (a second
    instance, or the same instance after a restart); a backend whose instances cannot share a
    database (in memory) returns the same object every time, and its ``open``/``close`` may be
    called more than once.
    """

    def make(self) -> Storage:
        """Return an unopened storage on this target's database."""
        ...


@dataclass(frozen=True, slots=True)
class StorageCheck:
    """One named check of the suite."""

    area: str
    name: str
    run: Callable[[StorageTarget], Awaitable[None]]

    def __str__(self) -> str:
        return f"{self.area}.{self.name}"


_CHECKS: list[StorageCheck] = []


def check(
    area: str,
) -> Callable[[Callable[[StorageTarget], Awaitable[None]]], Callable[[StorageTarget], Awaitable[None]]]:
    """Register the decorated coroutine as a check of ``area``."""

    def register(
        fn: Callable[[StorageTarget], Awaitable[None]],
    ) -> Callable[[StorageTarget], Awaitable[None]]:
        _CHECKS.append(StorageCheck(area, fn.__name__, fn))
        return fn

    return register


def storage_checks(areas: Iterable[str] | None = None) -> list[StorageCheck]:
    """Return the checks of the suite (of the given areas), in a stable order.

    :raises ValueError: an unknown area.
    """
    from hermes_core.storage_checks import (  # noqa: F401 - registers
        event_log,
        kernel,
        record_inserts,
        records,
        sessions,
    )

    wanted = tuple(AREAS if areas is None else areas)
    unknown = [a for a in wanted if a not in AREAS]
    if unknown:
        raise ValueError(f"unknown storage check area(s) {unknown}; known: {', '.join(AREAS)}")
    return [c for c in _CHECKS if c.area in wanted]


async def run_storage_checks(
    target: Callable[[], StorageTarget], areas: Iterable[str] | None = None
) -> dict[str, BaseException | None]:
    """Run every check, each on a fresh target; return each check's failure (None: passed)."""
    results: dict[str, BaseException | None] = {}
    for item in storage_checks(areas):
        try:
            await item.run(target())
            results[str(item)] = None
        except Exception as exc:
            results[str(item)] = exc
    return results


def ensure(condition: object, message: str) -> None:
    """Fail the check with ``message`` unless ``condition`` holds."""
    if not condition:
        raise AssertionError(message)


async def until(condition: Callable[[], Awaitable[bool]], what: str, timeout_s: float = 10.0) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


class World:
    """The storages a check opened on its target; ``close`` closes each once."""

    def __init__(self, target: StorageTarget) -> None:
        self.target = target
        self._opened: list[Storage] = []

    async def storage(self) -> Storage:
        """Return an open storage on the target's database (a new one where the backend can)."""
        made = self.target.make()
        if not any(made is s for s in self._opened):
            await made.open()
            self._opened.append(made)
        return made

    async def close(self) -> None:
        """Close every storage opened here."""
        opened, self._opened = self._opened, []
        for storage in reversed(opened):
            await storage.close()

    async def __aenter__(self) -> World:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = [
    "AREAS",
    "StorageCheck",
    "StorageTarget",
    "World",
    "ensure",
    "run_storage_checks",
    "storage_checks",
    "until",
]
