"""Queue items and the handles hosts hold: a submitted prompt (:class:`Turn`) and a bus subscription.

The :class:`~hermes_core.session.Session` owns the queue; these records are what it hands out.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.content import Part, SeedMessage, parts_text
from hermes_core.events import AnyEvent, TurnCompleted, TurnOutcome

if TYPE_CHECKING:
    from hermes_core.budgets import Admission, ChargeTo
    from hermes_core.models import ResolvedModel
    from hermes_core.session.live import Session

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
    listeners: list[Any] = field(default_factory=list)  # queues with ``put_nowait``
    #: A client's transcript to reconcile with when this item's turn starts (API chat bodies).
    reconcile: tuple[SeedMessage, ...] | None = None
    #: ``model`` as the host already resolved it (``submit(model=ResolvedModel)``): the turn
    #: uses it as it is instead of resolving ``model`` again.
    resolved: ResolvedModel | None = None
    #: The W3C ``traceparent`` the turn's span continues (docs/observability.md), if any.
    traceparent: str | None = None
    #: Who the turn charges (docs/reference/budgets.md); None: the configured default.
    charge: ChargeTo | None = None
    #: A run the transport already admitted for this item (its slot is released at turn end).
    admission: Admission | None = None

    @property
    def text(self) -> str:
        return parts_text(self.parts)


class _EventBuffer:
    """An unbounded single-reader queue of one turn's events, with a cheap wait deadline.

    The reader of a streaming turn waits once per delta, nearly always with a keepalive
    deadline that never passes. A timer per wait (``asyncio.timeout``) is the largest cost of
    that wait; here one timer serves many waits: each wait only moves the deadline, and the
    timer, when it fires early, re-arms itself at the deadline then in force.

    Items of a ``quiet`` type (:meth:`Turn.quiet_events`) are kept in order but do not end a
    wait on their own: they are taken with the next item that does.
    """

    __slots__ = ("_deadline", "_expired", "_items", "_loud", "_timer", "_waiter", "quiet")

    def __init__(self) -> None:
        self._items: collections.deque[Any] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._expired = False
        #: Types whose items do not wake the reader (set by the reader before it reads).
        self.quiet: frozenset[type] = frozenset()
        self._loud = 0  # queued items that are not quiet

    def put_nowait(self, item: Any) -> None:
        self._items.append(item)
        if type(item) in self.quiet:
            return
        self._loud += 1
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def ready(self) -> bool:
        """Whether an item that ends a wait is queued."""
        return self._loud > 0

    def get_nowait(self) -> Any:
        item = self._items.popleft()
        if type(item) not in self.quiet:
            self._loud -= 1
        return item

    def drain(self) -> tuple[list[Any], bool]:
        """Take every queued item up to the turn's end (``TurnCompleted`` or the end marker,
        which is not returned); return them and whether the end was among them."""
        items = self._items
        batch: list[Any] = []
        ended = False
        while items:
            item = items.popleft()
            if item is _DONE:
                ended = True
                break
            batch.append(item)
            if isinstance(item, TurnCompleted):
                ended = True
                break
        quiet = self.quiet
        self._loud = sum(1 for item in items if type(item) not in quiet) if items else 0
        return batch, ended

    async def get(self) -> Any:
        while not self._items:
            await self._wait()
        return self.get_nowait()

    async def get_ready(self) -> None:
        """Wait until an item that ends a wait is there (without taking it)."""
        while not self._loud:
            await self._wait()

    async def wait(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for an item that ends a wait; return whether one is
        there."""
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + timeout
        self._expired = False
        timer = self._timer
        if timer is not None and timer.when() > self._deadline:
            timer.cancel()  # a shorter wait than the one the timer was set for
            timer = None
        if timer is None:
            self._timer = loop.call_at(self._deadline, self._on_timer)
        while not self._loud and not self._expired:
            await self._wait()
        return self._loud > 0

    async def _wait(self) -> None:
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def _on_timer(self) -> None:
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return  # nobody waits with a deadline now; the next wait arms a new timer
        loop = asyncio.get_running_loop()
        if loop.time() >= self._deadline:
            self._expired = True
            waiter.set_result(None)
        else:
            self._timer = loop.call_at(self._deadline, self._on_timer)

    def close(self) -> None:
        """Drop the pending timer (the reader is done)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class Turn:
    """A handle on one submitted prompt: its events and its outcome."""

    def __init__(self, session: Session, item: QueueItem, *, track_events: bool = True) -> None:
        self._session = session
        self._item = item
        self._queue: _EventBuffer | None = None
        if track_events:
            self._queue = _EventBuffer()
            item.listeners.append(self._queue)
        self.item_id = item.item_id
        self.outcome: asyncio.Future[TurnOutcome] = item.future
        self._ended = False

    @property
    def position(self) -> int:
        """0 while running (or finished); 1 = next to run; …"""
        return self._session.position_of(self._item)

    async def events(self) -> AsyncIterator[AnyEvent]:
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

    def quiet_events(self, kinds: frozenset[type]) -> None:
        """Let events of these types wait for the next event that is not one of them.

        For a reader of :meth:`next_events` that writes nothing for them: they are still
        returned, in order, with the next event of another type, but on their own they do not
        wake the reader, nor count as something arriving before the wait's ``timeout``. Call it
        before the first read.
        """
        if self._queue is not None:
            self._queue.quiet = kinds

    async def next_events(self, timeout: float | None = None) -> list[AnyEvent] | None:
        """Wait for this turn's next event and return it with every event already behind it.

        One wake-up per burst instead of one per event: hosts that write events in frames read
        them this way. Do not mix with :meth:`events` on the same turn.

        :param timeout: seconds to wait for the first event; None waits as long as it takes.
        :returns: the events in order (the last one is ``TurnCompleted`` when the turn ended),
            an empty list once the turn's events are over, or None when ``timeout`` passed first
            (events of :meth:`quiet_events` types alone do not count).
        """
        queue = self._queue
        if queue is None:
            raise RuntimeError("this turn was submitted with track_events=False; use Session.subscribe()")
        if self._ended:
            return []
        if not queue.ready():
            if timeout is None:
                await queue.get_ready()
            elif not await queue.wait(timeout):
                return None
        batch, ended = queue.drain()
        if ended:
            self._ended = True
            queue.close()
        return batch


class Subscription:
    """An async iterator over every later event of a session; registered at creation."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        session.add_subscriber(self._queue)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> AnyEvent:
        ev = await self._queue.get()
        if ev is _DONE:
            self.close()
            raise StopAsyncIteration
        result: AnyEvent = ev
        return result

    def close(self) -> None:
        """Stop receiving events."""
        self._session.remove_subscriber(self._queue)

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
