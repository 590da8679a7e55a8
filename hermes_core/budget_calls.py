"""Budgets of the model calls the kernel makes outside a turn (docs/reference/budgets.md#outside-a-turn).

Title refinement, ``/compress`` (and automatic compaction) and task prompts are one-shot calls
(:meth:`~hermes_core.model_choice.Models.one_shot`). Each goes through :class:`ChargedCall`:
its worst case is reserved in the buckets of who pays before the request is sent, settled from
the reported usage when it ends, refunded when it fails before costing anything. Who pays for a
session's call is who its turns pay (:func:`charge_for_session`).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING

from hermes_core.budgets import Admission, ChargeTo
from hermes_core.ids import short_id

if TYPE_CHECKING:
    from hermes_core.budgets import Budgets, Reservation
    from hermes_core.providers import ChatRequest
    from hermes_core.session.live import Session


def charge_for_session(budgets: Budgets, session: Session, given: ChargeTo | None = None) -> ChargeTo:
    """Return who a call made for ``session`` charges: ``given`` (the caller's key and tenant),
    else what the session's latest turn charged, else the configured default; always with the
    session's own bucket (its root's, for a child agent's session)."""
    if given is None:
        admission = budgets.charged_by(session.id)
        given = admission.charge if admission is not None else budgets.default_charge()
    if given.session_id is None:
        given = replace(given, session_id=session.id)
    return given


class ChargedCall:
    """One auxiliary model call's reservation: :meth:`reserve`, then :meth:`settle` or :meth:`refund`.

    :param budgets: the kernel's budget owner.
    :param charge: who pays (None: the configured default key and tenant).
    :param provider: the provider's name (for its price).
    """

    def __init__(self, budgets: Budgets, charge: ChargeTo | None, provider: str) -> None:
        self._budgets = budgets
        self._charge = charge or budgets.default_charge()
        self._provider = provider
        self._held: Reservation | None = None

    def _applies(self) -> bool:
        return self._budgets.enabled and bool(self._budgets.buckets(self._charge))

    async def reserve(self, request: ChatRequest) -> ChatRequest:
        """Hold ``request``'s worst case; return it carrying the output limit that was reserved.

        :raises BudgetExceeded: it does not fit in some bucket (nothing is held then).
        """
        if not self._applies():
            return request
        from hermes_core.turn.budget import estimate_input

        out = request.options.get("max_tokens")
        if not isinstance(out, int) or isinstance(out, bool) or out <= 0:
            out = self._budgets.settings.max_output_tokens
            request = replace(request, options={**request.options, "max_tokens": out})
        admission = Admission(short_id("br_"), self._charge)  # no slot: a part of no run
        self._held = await self._budgets.reserve(
            admission, request.model, self._provider, estimate_input(request), out, remember=False
        )
        return request

    async def settle(self, tokens_in: int, tokens_out: int) -> None:
        """Charge what the call cost in place of its reservation."""
        held, self._held = self._held, None
        if held is not None:
            await asyncio.shield(self._budgets.settle(held, tokens_in, tokens_out))

    async def refund(self) -> None:
        """Give the reservation back (the call failed before costing anything)."""
        held, self._held = self._held, None
        if held is not None:
            await asyncio.shield(self._budgets.refund(held))
