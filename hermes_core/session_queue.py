"""Queue items and the handles hosts hold: a submitted prompt (:class:`Turn`) and a bus subscription.

The :class:`~hermes_core.session.Session` owns the queue; these records are what it hands out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.content import Part, parts_text
from hermes_core.events import Event, TurnCompleted, TurnOutcome

if TYPE_CHECKING:
    from hermes_core.session import Session

_DONE = object()


@dataclass(slots=True)
class QueueItem:
    """One submitted prompt waiting for (or running as) a turn."""

    item_id: str
    owner: str
    parts: tuple[Part, ...]
    merge: bool
    model: str | None
    model_options: dict[str, Any] | None
    answerable: frozenset[str]
    display_kind: str | None
    future: asyncio.Future[TurnOutcome]
    listeners: list[asyncio.Queue[Any]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return parts_text(self.parts)


class Turn:
    """A handle on one submitted prompt: its events and its outcome."""

    def __init__(self, session: Session, item: QueueItem, *, track_events: bool = True) -> None:
        self._session = session
        self._item = item
        self._queue: asyncio.Queue[Any] | None = None
        if track_events:
            self._queue = asyncio.Queue()
            item.listeners.append(self._queue)
        self.item_id = item.item_id
        self.outcome: asyncio.Future[TurnOutcome] = item.future

    @property
    def position(self) -> int:
        """0 while running (or finished); 1 = next to run; …"""
        return self._session._position_of(self._item)

    async def events(self) -> AsyncIterator[Event]:
        """Yield this turn's events, ``TurnStarted`` … ``TurnCompleted``."""
        if self._queue is None:
            raise RuntimeError("this turn was submitted with track_events=False; use Session.subscribe()")
        while True:
            ev = await self._queue.get()
            if ev is _DONE:
                return
            yield ev
            if isinstance(ev, TurnCompleted):
                return


class Subscription:
    """An async iterator over every later event of a session; registered at creation."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        session._subscribers.append(self._queue)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        ev = await self._queue.get()
        if ev is _DONE:
            self.close()
            raise StopAsyncIteration
        result: Event = ev
        return result

    def close(self) -> None:
        """Stop receiving events."""
        if self._queue in self._session._subscribers:
            self._session._subscribers.remove(self._queue)

    async def aclose(self) -> None:
        self.close()


def resolve_discarded(
    item: QueueItem, reason: Literal["interrupted_by_user", "interrupted_by_system"]
) -> None:
    """End a queue item that will never run: its outcome resolves ``interrupted``."""
    if not item.future.done():
        item.future.set_result(TurnOutcome(status="interrupted", reason=reason))
    for q in item.listeners:
        q.put_nowait(_DONE)
