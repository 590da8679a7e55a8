"""Submitting to a live session: the busy queue, steer and interrupt
(docs/reference/core.md#busy-input-and-the-queue, #steer, #interrupt).

:class:`SessionQueue` is a part of :class:`~hermes_core.session.Session`; the state it works on
(the queue, the runner, the running turn) is its own.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.backref import BackRef
from hermes_core.content import Part, SeedMessage, normalize_content, parts_text
from hermes_core.errors import InvalidValue, SessionBusy
from hermes_core.events import QuestionRequested, TurnOutcome
from hermes_core.ids import short_id
from hermes_core.session.queue import _DONE, QueueItem, Turn, resolve_discarded
from hermes_core.session.types import DiscardedItem, Interrupted
from hermes_core.tracing import valid_traceparent

if TYPE_CHECKING:
    from hermes_core.budgets import Admission, ChargeTo
    from hermes_core.models import ResolvedModel
    from hermes_core.session.live import Session
    from hermes_core.turn import TurnRun

log = logging.getLogger("hermes.session")
MAX_QUEUED_CHARS = 1 << 20
MAX_STEER_CHARS = 65536


class SessionQueue:
    """The part of a session that takes prompts: submit, the queue, steer and interrupt.

    It owns the waiting items, the runner task and the running turn (``run``).
    """

    #: The owning session, held weakly (it holds this part).
    _session: BackRef[Session] = BackRef()

    def __init__(self, session: Session) -> None:
        self._session = session
        self._queue: collections.deque[QueueItem] = collections.deque()
        self._queued_chars = 0
        self._runner: asyncio.Task[None] | None = None
        #: The running turn, or None.
        self.run: TurnRun | None = None

    @property
    def busy(self) -> bool:
        """Whether a turn runs or prompts wait."""
        return self._runner is not None or bool(self._queue)

    @property
    def waiting(self) -> int:
        """How many prompts wait behind the running turn."""
        return len(self._queue)

    async def settle(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the runner to finish (after an interrupt)."""
        runner = self._runner
        if runner is not None:
            try:
                await asyncio.wait_for(asyncio.shield(runner), timeout)
            except (TimeoutError, asyncio.CancelledError, Exception):
                pass

    async def submit(
        self,
        content: str | Sequence[Part],
        *,
        owner: str,
        merge: bool = False,
        model: str | ResolvedModel | None = None,
        model_options: dict[str, Any] | None = None,
        answerable: frozenset[str] | set[str] = frozenset(),
        display_kind: str | None = None,
        track_events: bool = True,
        reconcile: Sequence[SeedMessage] | None = None,
        traceparent: str | None = None,
        charge: ChargeTo | None = None,
        admission: Admission | None = None,
    ) -> Turn:
        """Start a turn now, or queue it behind the running one
        (docs/reference/core.md#busy-input-and-the-queue).

        :param answerable: the question kinds (``approval``, ``clarify``, ``sudo``, ``secret``;
            ``ALL_KINDS`` for all) someone will answer with ``Kernel.answer``. The default, none,
            is the safe one for a host that cannot ask: a question is closed at once as
            ``no_answerer`` (an approval is denied), so no tool ever waits for an answer.

        :param track_events: keep a per-turn event queue for :meth:`Turn.events`; hosts that
            read the session bus instead pass False so a long turn's events are not held twice.
        :param reconcile: a client's transcript before this prompt (API chat bodies): when the
            turn starts, after every turn queued ahead of it, the stored history is reconciled
            with it (see :meth:`Session.reconcile`), so the model sees what the client sent.
        :param model: this turn's model: a reference, resolved here (an unknown one raises
            before anything is queued), or a ``ResolvedModel`` the host resolved already
            (``Kernel.resolve_model``), used as it is so a request resolves its model once.
        :param traceparent: the W3C ``traceparent`` of the caller's span (an HTTP request's
            header, a child agent's parent tool call): the turn's span continues that trace. A
            malformed value is ignored (docs/observability.md).
        :param charge: who the turn charges (docs/reference/budgets.md); None: the configured
            default key and tenant, and this session.
        :param admission: a run the host already admitted with ``kernel.budgets.admit`` (the
            API does, to answer 429 before the call); the turn releases its slot when it ends.
        """
        self._session.check_open()
        parts = normalize_content(content)
        text = parts_text(parts)
        if not text.strip() and len(parts) == len([p for p in parts if hasattr(p, "text")]):
            raise InvalidValue("content", message="the prompt is empty")
        if self.busy and self._queued_chars + len(text) > MAX_QUEUED_CHARS:
            raise SessionBusy("queue_full", "more than 1 MiB of queued text; wait or interrupt")
        resolved: ResolvedModel | None = None
        if isinstance(model, str):
            await self._session.kernel.resolve_model(model, session=self._session)
        elif model is not None:
            resolved, model = model, model.ref
        loop = asyncio.get_running_loop()
        item = QueueItem(
            item_id=short_id("q_"),
            owner=owner,
            parts=parts,
            merge=merge,
            model=model,
            model_options=dict(model_options) if model_options else None,
            answerable=frozenset(answerable),
            display_kind=display_kind,
            future=loop.create_future(),
            reconcile=None if reconcile is None else tuple(reconcile),
            resolved=resolved,
            traceparent=valid_traceparent(traceparent),
            charge=admission.charge if admission is not None else charge,
            admission=admission,
        )
        turn = Turn(self._session, item, track_events=track_events)
        self._queue.append(item)
        self._queued_chars += len(text)
        if self._runner is None:
            # Start at once, synchronously: a steer or interrupt that follows sees this turn.
            self._start_next()
        else:
            self._session.mark_changed("queued")
        return turn

    def _start_next(self) -> None:
        from hermes_core.turn import TurnRun

        batch = self._take_batch()
        self.run = TurnRun(self._session, batch, queued=False)
        self._runner = asyncio.create_task(self._drain(), name=f"hermes-session-{self._session.id}")

    def position_of(self, item: QueueItem) -> int:
        """Return ``item``'s place in the queue (1 is next), 0 when it is not waiting."""
        for index, waiting in enumerate(self._queue):
            if waiting is item:
                return index + 1
        return 0

    def _take_batch(self) -> list[QueueItem]:
        head = self._queue.popleft()
        batch = [head]
        while self._queue and self._queue[0].merge:
            batch.append(self._queue.popleft())
        self._queued_chars -= sum(len(i.text) for i in batch)
        return batch

    async def _drain(self) -> None:
        from hermes_core.turn import TurnRun

        try:
            while self.run is not None:
                run = self.run
                try:
                    outcome = await run.execute()
                except Exception:  # execute() settles every failure; this is the last guard
                    log.exception("turn of session %s failed to settle", self._session.id)
                    outcome = TurnOutcome(status="error", reason="tool_crash", layer="agent")
                finally:
                    self._session.set_status("idle")
                    self.run = None
                for item in run.items:
                    if not item.future.done():
                        item.future.set_result(outcome)
                    for q in item.listeners:
                        q.put_nowait(_DONE)
                if self._queue and not self._session.closed:
                    batch = self._take_batch()
                    self.run = TurnRun(self._session, batch, queued=True)
        finally:
            self.run = None
            self._runner = None
            self._session.mark_changed("busy")

    def cancel_queued(self, item_id: str) -> bool:
        """Remove one waiting item; its outcome resolves ``interrupted`` (by user)."""
        for item in list(self._queue):
            if item.item_id == item_id:
                self._queue.remove(item)
                self._queued_chars -= len(item.text)
                resolve_discarded(item, "interrupted_by_user")
                self._session.mark_changed("queued")
                return True
        return False

    def steer(self, text: str) -> Literal["accepted", "idle", "settling"]:
        """Queue guidance for the next tool boundary of the running turn (docs/reference/core.md#steer)."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidValue("text", message="steer text is empty")
        if len(text) > MAX_STEER_CHARS:
            raise InvalidValue("text", message=f"steer text is longer than {MAX_STEER_CHARS} characters")
        run = self.run
        if run is None:
            return "idle"
        if run.settling:
            return "settling"
        run.steer_buffer.append(text)
        return "accepted"

    def withdraw_steer(self) -> list[str]:
        """Take back the steering texts the running turn has not delivered yet
        (docs/reference/core.md#steer); they will not reach the model."""
        run = self.run
        if run is None or not run.steer_buffer:
            return []
        texts, run.steer_buffer = run.steer_buffer, []
        return texts

    async def interrupt(
        self, *, reason: Literal["user", "system"] = "user", discard_queue: bool = False
    ) -> Interrupted:
        """Stop the running turn; optionally drop every waiting item (docs/reference/core.md#interrupt)."""
        discarded: list[DiscardedItem] = []
        why: Literal["interrupted_by_user", "interrupted_by_system"] = (
            "interrupted_by_user" if reason == "user" else "interrupted_by_system"
        )
        if discard_queue:
            while self._queue:
                item = self._queue.popleft()
                discarded.append(DiscardedItem(item.item_id, item.owner, item.text))
                resolve_discarded(item, why)
            self._queued_chars = 0
        run = self.run
        was_running = run is not None
        if run is not None:
            await run.interrupt(why)
        if discarded:
            self._session.mark_changed("queued")
        return Interrupted(was_running, tuple(discarded))

    def open_questions(self) -> list[QuestionRequested]:
        """Return this session's unanswered questions, in their original request shape."""
        return self._session.kernel.pending_questions.open_for(self._session.id)
