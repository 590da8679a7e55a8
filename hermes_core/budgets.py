"""``kernel.budgets``: spend and rate limits per key, tenant and session (docs/reference/budgets.md).

A transport says who a turn charges with a :class:`ChargeTo`; the turn asks this owner to
``admit`` it (one request, a run slot) unless the transport already did (the API does, to answer
429 before the call), to ``reserve`` each model call's worst case and ``settle`` it from the
reported usage (or refund it on error), and to ``release`` the slot when it ends. The buckets live
in a :class:`~hermes_core.budget_ledger.BudgetLedger`: a ``hermes_budget_ledgers`` plugin's
(Redis) or the kernel's records.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes_core.budget_ledger import (
    BucketLimits,
    BudgetLedger,
    LedgerCall,
    Verdict,
    counts_runs,
)
from hermes_core.errors import BudgetExceeded, BudgetUnavailable
from hermes_core.ids import short_id

if TYPE_CHECKING:
    from hermes_core.kernel import Kernel
    from hermes_core.records import ModelPrice
    from hermes_core.settings import BudgetLimits, BudgetSettings

log = logging.getLogger("hermes.budgets")
_KEPT_CHARGES = 10_000


@dataclass(frozen=True, slots=True)
class ChargeTo:
    """Who a turn charges: the caller's key and tenant, and the session (None: the turn's own).

    :ivar root_run_id: the run a child agent's calls count against (set by the kernel).
    """

    key_id: str
    tenant: str = "default"
    session_id: str | None = None
    root_run_id: str | None = None


@dataclass(frozen=True, slots=True)
class Admission:
    """An admitted run: its slot in every bucket of ``charge`` until :meth:`Budgets.release`."""

    run_id: str
    charge: ChargeTo


@dataclass(frozen=True, slots=True)
class Reservation:
    """One model call's worst case, held until :meth:`Budgets.settle`."""

    res_id: str
    admission: Admission
    usd: float
    tokens: int
    price: tuple[float, float] | None


class Budgets:
    """The kernel's budget owner (``kernel.budgets``).

    :param kernel: the kernel whose settings and records it uses.
    """

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._ledger: BudgetLedger | None = None
        self._charges: OrderedDict[str, Admission] = OrderedDict()
        self._prices: dict[tuple[str, str], tuple[float, float] | None] = {}
        #: bucket → (monotonic time until which, limit): refusals this process heard.
        self._refused: dict[str, tuple[float, str]] = {}
        # What the settings in force say, worked out once per settings object (a reload makes a
        # new one): whether any limit is set, and the buckets of each charge.
        self._for: BudgetSettings | None = None
        self._enabled = False
        self._buckets: dict[tuple[str, str, str | None], list[BucketLimits]] = {}
        #: (provider, model) → what :meth:`price` answered under the settings in force.
        self._priced: dict[tuple[str, str], tuple[float, float] | None] = {}

    def _current(self) -> BudgetSettings:
        settings = self._kernel.settings.budgets
        if settings is not self._for:
            self._for, self._enabled = settings, settings.enabled()
            self._buckets, self._priced = {}, {}
        return settings

    @property
    def settings(self) -> BudgetSettings:
        """The ``[budgets]`` settings in force."""
        return self._kernel.settings.budgets

    @property
    def enabled(self) -> bool:
        """Whether any limit is configured (otherwise every call here is free and immediate)."""
        self._current()
        return self._enabled

    def ledger(self) -> BudgetLedger:
        """Return the ledger: the first ``hermes_budget_ledgers`` one that builds, else records."""
        if self._ledger is None:
            for spec in self._kernel.registry.ledgers.values():
                try:
                    made = spec.factory(self._kernel)
                except Exception as exc:  # fail closed: no ledger, no budgeted call
                    log.warning("budgets: ledger %s could not start: %s", spec.name, exc)
                    raise BudgetUnavailable(f"budget ledger {spec.name} could not start: {exc}") from exc
                if made is not None:
                    self._ledger = made
                    break
            else:
                from hermes_core.budget_records import NAMESPACE, RecordsLedger

                self._ledger = RecordsLedger(self._kernel.records.space(NAMESPACE))
            log.info("budgets: buckets kept in %s", self._ledger.name)
        return self._ledger

    async def aclose(self) -> None:
        """Close the ledger's connections (at kernel shutdown)."""
        if self._ledger is not None:
            await self._ledger.aclose()
            self._ledger = None

    def default_charge(self) -> ChargeTo:
        """Return the configured default key and tenant (TUI, ACP, embedders)."""
        return ChargeTo(key_id=self.settings.default_key, tenant=self.settings.default_tenant)

    def buckets(self, charge: ChargeTo) -> list[BucketLimits]:
        """Return the buckets ``charge`` applies to that have a limit: key, tenant, session.

        The list is shared: callers read it and never change it.
        """
        s = self._current()
        cache_key = (charge.key_id, charge.tenant, charge.session_id)
        cached = self._buckets.get(cache_key)
        if cached is not None:
            return cached
        found: list[BucketLimits] = []
        key = s.keys.get(charge.key_id, s.key)
        tenant = s.tenants.get(charge.tenant, s.tenant)
        for name, limits in (
            (f"key:{charge.key_id}", key),
            (f"tenant:{charge.tenant}", tenant),
            (f"session:{charge.session_id}" if charge.session_id else "", s.session),
        ):
            if name and limits.any():
                found.append(_limits(name, limits))
        if len(self._buckets) >= _KEPT_CHARGES:
            self._buckets.clear()
        self._buckets[cache_key] = found
        return found

    async def admit(self, charge: ChargeTo) -> Admission:
        """Count one request and take a run slot in every bucket of ``charge``.

        :raises BudgetExceeded: a bucket is over a limit (or the ledger is unreachable).
        """
        admission = Admission(short_id("br_"), charge)
        if not self.enabled:
            return admission
        buckets = self.buckets(charge)
        if any(counts_runs(b) for b in buckets):
            await self._apply(charge, LedgerCall("admit", admission.run_id, ttl_s=self._ttl()))
            return admission
        # Only spend and token limits: admitting writes nothing, so no round trip either. What
        # this process last heard refused (a cap used up, a minute's tokens gone) is refused at
        # once; anything else goes on to its reservation, which is exact.
        now = time.monotonic()
        for bucket in buckets:
            refusal = self._refused.get(bucket.key)
            if refusal is not None and refusal[0] > now:
                raise BudgetExceeded(
                    f"budget exceeded: {bucket.key} is over its {refusal[1]} limit",
                    bucket=bucket.key,
                    limit=refusal[1],
                    retry_after=refusal[0] - now,
                )
        return admission

    async def release(self, admission: Admission) -> None:
        """Give the run's slot back (a failure is logged: the slot expires on its own)."""
        if not self.enabled or not any(counts_runs(b) for b in self.buckets(admission.charge)):
            return
        try:
            await self._apply(admission.charge, LedgerCall("release", admission.run_id))
        except BudgetExceeded:
            log.warning("budgets: could not release run %s; it expires on its own", admission.run_id)

    async def reserve(
        self,
        admission: Admission,
        model: str,
        provider: str,
        tokens_in: int,
        tokens_out: int,
        *,
        remember: bool = True,
    ) -> Reservation:
        """Hold a model call's worst case (``tokens_in`` estimated + ``tokens_out`` allowed).

        :param remember: whether a lasting refusal makes later admissions refused at once (an
            auxiliary call's output limit is no measure of a turn's, so its refusal does not).
        :raises BudgetExceeded: it does not fit in some bucket.
        """
        self._current()
        pair = (provider, model)
        price = self._priced[pair] if pair in self._priced else await self.price(provider, model)
        usd = _cost(price, tokens_in, tokens_out)
        reservation = Reservation(short_id("bv_"), admission, usd, tokens_in + tokens_out, price)
        call = LedgerCall(
            "reserve", admission.run_id, reservation.res_id, usd, reservation.tokens, self._ttl()
        )
        await self._apply(admission.charge, call, remember=remember)
        return reservation

    async def settle(self, reservation: Reservation, tokens_in: int, tokens_out: int) -> float:
        """Replace the reservation by what the call cost; return that cost in dollars."""
        usd = _cost(reservation.price, tokens_in, tokens_out)
        call = LedgerCall(
            "settle", reservation.admission.run_id, reservation.res_id, usd, tokens_in + tokens_out
        )
        try:
            await self._apply(reservation.admission.charge, call)
        except BudgetExceeded:
            log.warning("budgets: could not settle %s ($%.6f)", reservation.res_id, usd)
        return usd

    async def refund(self, reservation: Reservation) -> None:
        """Drop a reservation whose call failed before it cost anything."""
        call = LedgerCall("settle", reservation.admission.run_id, reservation.res_id)
        try:
            await self._apply(reservation.admission.charge, call)
        except BudgetExceeded:
            log.warning("budgets: could not refund %s; it expires on its own", reservation.res_id)

    def remember(self, session_id: str, admission: Admission) -> None:
        """Note what a session's turn charges, so its child agents charge the same buckets."""
        self._charges[session_id] = admission
        self._charges.move_to_end(session_id)
        while len(self._charges) > _KEPT_CHARGES:
            self._charges.popitem(last=False)

    def charged_by(self, session_id: str) -> Admission | None:
        """Return what the latest turn of ``session_id`` charged, if any."""
        return self._charges.get(session_id)

    async def price(self, provider: str, model: str) -> tuple[float, float] | None:
        """Return ``(input, output)`` dollars per million tokens: ``[budgets.prices]`` first
        (``provider/model``, ``provider``, ``*``), then the price tables; None when unpriced."""
        settings = self._current()
        priced = self._priced
        prices = settings.prices
        found: tuple[float, float] | None
        for name in (f"{provider}/{model}", provider, "*"):
            if name in prices:
                found = prices[name].input, prices[name].output
                break
        else:
            if (provider, model) not in self._prices:
                self._prices[(provider, model)] = await self._table_price(provider, model)
            found = self._prices[(provider, model)]
        if len(priced) >= _KEPT_CHARGES:
            priced.clear()
        priced[(provider, model)] = found  # only if the settings did not change meanwhile
        return found

    async def _table_price(self, provider: str, model: str) -> tuple[float, float] | None:
        import asyncio

        base_url = self._kernel.hub.base_url(provider)
        for source in self._kernel.registry.prices.values():
            try:
                found = await asyncio.get_running_loop().run_in_executor(
                    self._kernel.executor, source.lookup, provider, base_url, (model,)
                )
            except Exception:
                log.warning("budgets: price source %s failed", source.name, exc_info=True)
                continue
            price: ModelPrice | None = found.get(model)
            if price is not None:
                return price.input or 0.0, price.output or 0.0
        log.warning("budgets: no price for %s/%s; its calls count no spend", provider, model)
        return None

    def _ttl(self) -> float:
        return self.settings.reservation_ttl_s

    async def _apply(self, charge: ChargeTo, call: LedgerCall, *, remember: bool = True) -> Verdict:
        buckets = self.buckets(charge)
        if not buckets:
            return Verdict(True)
        try:
            verdict = await self.ledger().apply(buckets, call)
        except BudgetUnavailable as exc:
            raise BudgetExceeded(str(exc), bucket=None, limit="unavailable", retry_after=5.0) from exc
        if not verdict.ok:
            # Remembered only when the bucket is used up for every call: a refusal of one call
            # too big for the room left must not refuse the smaller ones after it.
            lasting = verdict.exhausted and verdict.limit in ("tokens_per_minute", "spend_usd")
            if verdict.bucket is not None and lasting and remember:
                if len(self._refused) > _KEPT_CHARGES:
                    self._refused.clear()
                self._refused[verdict.bucket] = (time.monotonic() + verdict.retry_after, str(verdict.limit))
            raise BudgetExceeded(
                f"budget exceeded: {verdict.bucket} is over its {verdict.limit} limit",
                bucket=verdict.bucket,
                limit=verdict.limit or "spend_usd",
                retry_after=verdict.retry_after,
            )
        return verdict


def _limits(name: str, limits: BudgetLimits) -> BucketLimits:
    return BucketLimits(
        name, limits.spend_usd, limits.tokens_per_minute, limits.requests_per_minute, limits.concurrent_runs
    )


def _cost(price: tuple[float, float] | None, tokens_in: int, tokens_out: int) -> float:
    if price is None:
        return 0.0
    return (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
