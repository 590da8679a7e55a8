"""A turn's budget (docs/reference/budgets.md#in-a-turn): admit it, reserve before each model
call, settle after, release at the end.

Who pays comes from the turn's queue items (``Session.submit(charge=…, admission=…)``); a child
agent's turn charges what its parent's latest turn charged, so delegated work counts against the
root run's buckets; a turn with neither charges the configured default key and tenant and its
own session.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hermes_core.backref import BackRef
from hermes_core.errors import BudgetExceeded
from hermes_core.events import TurnOutcome
from hermes_core.outlive import retrieve

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from hermes_core.budgets import Admission, Reservation
    from hermes_core.events import Usage
    from hermes_core.providers import ChatRequest
    from hermes_core.turn import TurnRun


def exceeded(exc: BudgetExceeded, partial: bool) -> TurnOutcome:
    """Return the ``budget_exceeded`` outcome of a refusal."""
    return TurnOutcome(
        status="error",
        reason="budget_exceeded",
        # An unreachable ledger (budgets fail closed) is a storage failure, not a limit.
        layer="storage" if exc.limit == "unavailable" else "agent",
        partial=partial,
        retryable=True,
        retry_after=exc.retry_after,
        message=str(exc),
    )


def estimate_input(request: ChatRequest) -> int:
    """Estimate a request's input tokens: a quarter of its characters, rounded up, plus one per
    message (a tokenizer per model would cost more than the call's own framing)."""
    chars = len(request.system or "") + sum(len(m.content) + 8 for m in request.messages)
    if request.tools:
        # The JSON of the list of every tool's parameters: each one's, plus "[", "]" and ", ".
        chars += sum(_schema_chars(t.parameters) for t in request.tools) + 2 * len(request.tools)
        chars += sum(len(t.name) + len(t.description) for t in request.tools)
    return -(-chars // 4) + len(request.messages)


#: id(parameters) → (the parameters, the length of their JSON): a registry's tool keeps its
#: schema object, so each call does not encode every schema again (it is on the way to the
#: first token). Kept with the object itself, so a reused id is never mistaken for it.
_SCHEMA_CHARS: dict[int, tuple[object, int]] = {}


def _schema_chars(parameters: object) -> int:
    known = _SCHEMA_CHARS.get(id(parameters))
    if known is not None and known[0] is parameters:
        return known[1]
    chars = len(json.dumps(parameters, default=str))
    if len(_SCHEMA_CHARS) >= 4096:
        _SCHEMA_CHARS.clear()
    _SCHEMA_CHARS[id(parameters)] = (parameters, chars)
    return chars


class TurnBudget:
    """What one turn charges (``TurnRun.budget``).

    :param run: the turn.
    """

    #: The turn, held weakly (the turn holds its budget).
    _run: BackRef[TurnRun] = BackRef()

    def __init__(self, run: TurnRun) -> None:
        self._run = run
        self._budgets = run.kernel.budgets
        self.active = self._budgets.enabled
        self.admission: Admission | None = None
        self._owned: list[Admission] = []
        self._head: Reservation | None = None
        #: Why the turn was not admitted (it ends ``budget_exceeded`` once its prompt is stored).
        self.refused: BudgetExceeded | None = None
        #: Settlements started and not yet awaited (see :meth:`settle`).
        self._settling: list[asyncio.Future[Any]] = []

    async def start(self) -> None:
        """Find who pays and admit the turn (unless the transport or a parent already did); a
        refusal is kept in :attr:`refused`."""
        if not self.active:
            return
        run = self._run
        session = run.session
        given = [i.admission for i in run.items if i.admission is not None]
        self._owned = list(given)
        lineage = session.lineage
        if given:
            self.admission = given[0]
            if self.admission.charge.session_id is None:
                # Admitted before its session existed (a run that opens one): the turn's calls
                # count in the session's bucket too; its slot is in the others.
                charge = replace(self.admission.charge, session_id=session.id)
                self.admission = type(self.admission)(self.admission.run_id, charge)
        elif lineage is not None and self._budgets.charged_by(lineage.parent_id) is not None:
            self.admission = self._budgets.charged_by(lineage.parent_id)
        else:
            found = next((i.charge for i in run.items if i.charge is not None), None)
            charge = found or self._budgets.default_charge()
            if charge.session_id is None:
                charge = replace(charge, session_id=session.id)
            try:
                self.admission = await self._budgets.admit(charge)
            except BudgetExceeded as exc:
                self.refused = exc
                return
            self._owned.append(self.admission)
        if self.admission is not None:
            self._budgets.remember(session.id, self.admission)

    def _applies(self) -> bool:
        admission = self.admission
        return self.active and admission is not None and bool(self._budgets.buckets(admission.charge))

    def prepare(self, request: ChatRequest) -> ChatRequest:
        """Return the request with the output limit its reservation counts (``max_tokens``: the
        request's own, else ``[budgets] max_output_tokens``); unchanged when nothing is budgeted."""
        if not self._applies():
            return request
        out = request.options.get("max_tokens")
        if not isinstance(out, int) or isinstance(out, bool) or out <= 0:
            out = self._budgets.settings.max_output_tokens
            request = replace(request, options={**request.options, "max_tokens": out})
        return request

    async def hold(self, request: ChatRequest) -> Reservation | None:
        """Reserve a :meth:`prepare` d request's worst case (None when nothing is budgeted).

        :raises BudgetExceeded: it does not fit.
        """
        if not self._applies():
            return None
        if self._settling:
            await self.settled()  # the previous call's charge is in the buckets before this one
        assert self.admission is not None
        resolved = self._run.resolved
        provider = resolved.provider if resolved is not None else "?"
        out = request.options.get("max_tokens")
        tokens_out = out if isinstance(out, int) else 0
        return await self._budgets.reserve(
            self.admission, request.model, provider, estimate_input(request), tokens_out
        )

    async def reserve(self, request: ChatRequest) -> tuple[ChatRequest, Reservation | None]:
        """Hold a call's worst case; the request gets the output limit it reserved.

        :raises BudgetExceeded: it does not fit.
        """
        request = self.prepare(request)
        return request, await self.hold(request)

    async def hold_head(self, request: ChatRequest) -> None:
        """Reserve the first call opened early (:class:`~hermes_core.turn.head_start.HeadStart`
        sends it once this returns); :meth:`take_head` hands the reservation on.

        :raises BudgetExceeded: it does not fit (the turn reports it after storing the prompt).
        """
        self._head = await self.hold(request)

    def take_head(self) -> Reservation | None:
        """Hand the early first call's reservation to the call that reads it."""
        held, self._head = self._head, None
        return held

    async def settle(self, held: Reservation | None, usage: Usage | None) -> None:
        """Start charging what a call cost (its reported usage, else nothing) in place of
        ``held``, without waiting for the ledger.

        The turn goes on to store the call's reply meanwhile: on SQLite both writes reach the
        database thread together (one hand-off, one commit) instead of one after the other. The
        turn's next reservation and :meth:`finish` wait for it (:meth:`settled`), so a turn never
        reserves, nor ends, before what it spent is counted.
        """
        if held is None:
            return
        charging: Coroutine[Any, Any, object] = (
            self._budgets.refund(held)
            if usage is None
            else self._budgets.settle(held, usage.input, usage.output)
        )
        started: asyncio.Future[object] = asyncio.ensure_future(charging)
        started.add_done_callback(retrieve)  # raised again by :meth:`settled`
        self._settling.append(started)

    async def settled(self) -> None:
        """Wait for the settlements :meth:`settle` started (the first failure is raised)."""
        settling, self._settling = self._settling, []
        failure: BaseException | None = None
        for started in settling:
            try:
                await asyncio.shield(started)
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    async def refund(self, held: Reservation | None) -> None:
        """Give back a call's reservation (it failed before costing anything)."""
        if held is not None:
            await self._budgets.refund(held)

    async def finish(self) -> None:
        """Wait for the calls' settlements; release the slots of the runs this turn admitted (or
        was handed)."""
        try:
            await self.settled()
        finally:
            await self._release()

    async def _release(self) -> None:
        held = self.take_head()
        if held is not None:
            await self._budgets.refund(held)  # a first call opened but never read
        owned, self._owned = self._owned, []
        for admission in owned:
            await self._budgets.release(admission)
