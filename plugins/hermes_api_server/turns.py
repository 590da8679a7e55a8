"""Drive one core turn for an HTTP request: pump its events, abandon it on disconnect
(docs/reference/api-server.md#sse-streams)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from hermes_api_server.trace_context import caller_trace
from hermes_core import (
    EventLogStopped,
    ImagePart,
    InvalidValue,
    ModelAmbiguous,
    ModelNotFound,
    TurnCompleted,
    model_vision,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hermes_api_server.convert import Conversation
    from hermes_api_server.model_select import ModelChoice
    from hermes_core import Admission, AnyEvent, Kernel, Part, ResolvedModel, SeedMessage, Session, Turn

KEEPALIVE_S = 10.0
_END = object()


class EventPump:
    """Read a turn's events in batches: everything ready at each wake-up, or None after silence.

    :param turn: the turn to read (submitted with ``track_events=True``).
    """

    def __init__(self, turn: Turn) -> None:
        # A stand-in that only offers ``events()`` is read through a copying task.
        self.turn: Any = turn if hasattr(turn, "next_events") else _Copier(turn)

    def quiet(self, kinds: frozenset[type]) -> None:
        """Say which events the reader writes nothing for: they wait for the next other event
        instead of waking it (``Turn.quiet_events``; a stand-in turn wakes it for each)."""
        quiet = getattr(self.turn, "quiet_events", None)
        if quiet is not None:
            quiet(kinds)

    async def next(self, timeout: float | None) -> list[AnyEvent] | None:
        """Return the next ready events; [] once they are over, None when ``timeout`` passed first."""
        batch: list[AnyEvent] | None = await self.turn.next_events(timeout)
        return batch

    async def batches(self, keepalive_s: float = KEEPALIVE_S) -> AsyncIterator[list[AnyEvent] | None]:
        """Yield lists of ready events, or None after ``keepalive_s`` of silence."""
        while True:
            batch = await self.turn.next_events(keepalive_s)
            if batch is None:
                yield None
                continue
            if batch:
                yield batch
            if not batch or isinstance(batch[-1], TurnCompleted):
                return

    async def close(self) -> None:
        """Stop reading."""
        if isinstance(self.turn, _Copier):
            await self.turn.close()


class _Copier:
    """Give an object with only ``events()`` the ``next_events`` of a core ``Turn``."""

    def __init__(self, turn: Any) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task = asyncio.create_task(self._run(turn), name="hermes-api-pump")
        self._ended = False

    async def _run(self, turn: Any) -> None:
        try:
            async for event in turn.events():
                self.queue.put_nowait(event)
        finally:
            self.queue.put_nowait(_END)

    async def next_events(self, timeout: float | None = None) -> list[Any] | None:
        if self._ended:
            return []
        try:
            item = await asyncio.wait_for(self.queue.get(), timeout)
        except TimeoutError:
            return None
        batch: list[Any] = []
        while item is not _END:
            batch.append(item)
            if isinstance(item, TurnCompleted) or self.queue.empty():
                return batch
            item = self.queue.get_nowait()
        self._ended = True
        return batch

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task


async def submit_turn(
    session: Session,
    conv: Conversation,
    choice: ModelChoice,
    owner: str,
    answerable: frozenset[str] = frozenset(),
    reconcile: Sequence[SeedMessage] | None = None,
    admission: Admission | None = None,
) -> Turn:
    """Submit a request's new content as a turn, with the request's model as a per-turn hot swap.

    :param session: the open session.
    :param conv: the converted request (its ``parts`` are the new user content).
    :param choice: the request's model choice (``ref`` None keeps the session's model).
    :param owner: the principal the turn belongs to.
    :param answerable: the question kinds this surface can answer (runs: approvals only).
    :param reconcile: the client's transcript, reconciled with storage when the turn starts.
    :param admission: the request's budget admission when the caller took it earlier (runs);
        otherwise it is taken here, before the call (docs/reference/api-server.md#budgets).
    :returns: the turn.
    :raises ApiError: 429 ``budget_exceeded`` (or 503 ``budget_unavailable``) before the call.
    """
    kernel = session.kernel
    if admission is None and kernel.budgets.enabled:
        from hermes_api_server.budget_gate import admit

        admission = await admit(kernel, owner, session.id)
    try:
        return await _submit(session, conv, choice, owner, answerable, reconcile, admission)
    except BaseException:
        if admission is not None:  # the turn never took it: give the slot back now
            await asyncio.shield(kernel.budgets.release(admission))
        raise


async def _submit(
    session: Session,
    conv: Conversation,
    choice: ModelChoice,
    owner: str,
    answerable: frozenset[str],
    reconcile: Sequence[SeedMessage] | None,
    admission: Admission | None,
) -> Turn:
    try:
        return await session.submit(
            conv.parts,
            owner=owner,
            model=choice.for_turn,
            model_options=choice.options,
            answerable=answerable,
            reconcile=reconcile,
            traceparent=caller_trace(),
            admission=admission,
        )
    except (ModelAmbiguous, ModelNotFound) as exc:
        # Checked up front too; this covers a reference the catalog stopped serving meanwhile.
        from hermes_api_server.model_select import model_error

        raise model_error(exc) from None
    except InvalidValue as exc:
        # The core's own check of the content (e.g. a prompt that is only Unicode whitespace the
        # request checks let through) is the client's mistake, never a server error.
        from hermes_api_server.errors import invalid

        raise invalid(str(exc)) from None


async def stored_first(kernel: Kernel, session_id: str, events: Sequence[AnyEvent]) -> None:
    """Wait until the session's event log stored ``events`` (the newest of them), before
    anything derived from them is shown (docs/reference/api-server.md#resume-after-a-restart).

    :raises EventLogStopped: the log stopped before storing them, or had stopped taking events
        (an event without a number while logging is on): they were not logged, and a number
        shown for them could be given to another event after a restart.
    """
    last = max((event.seq for event in events), default=0)
    if last:
        await kernel.events.durable(session_id, last)
    if kernel.events.enabled and any(event.seq == 0 for event in events):
        stored = kernel.events.stored(session_id)
        if stored is not None:
            raise EventLogStopped(session_id, stored + 1, stored)


async def abandon(session: Session, turn: Turn) -> None:
    """Interrupt (or unqueue) a turn nobody is reading any more, and wait for it to settle."""
    if turn.outcome.done():
        return
    if turn.position > 0:
        session.cancel_queued(turn.item_id)
    else:
        await session.interrupt(reason="user")
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.shield(turn.outcome), 5)


async def image_warning(kernel: Kernel, model: str | ResolvedModel, parts: Sequence[Part]) -> dict[str, str]:
    """Return ``X-Hermes-Warning: images_dropped`` when images go to a model without vision.

    :param model: the turn's model, resolved already when the request chose it (not resolved
        again), else its reference.
    """
    if not model or not any(isinstance(p, ImagePart) for p in parts):
        return {}
    if isinstance(model, str):
        try:
            resolved = await kernel.resolve_model(model)
        except Exception:
            return {}
    else:
        resolved = model
    # Unknown vision (a custom endpoint that does not say) sends the images: no warning up front.
    if await model_vision(kernel, resolved) is not False:
        return {}
    return {"X-Hermes-Warning": "images_dropped"}
