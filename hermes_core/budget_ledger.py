"""The budget ledger contract and the arithmetic of one bucket (docs/reference/budgets.md).

A bucket (``key:<id>``, ``tenant:<name>``, ``session:<id>``) holds what was spent, the
reservations in flight, the current minute's tokens and requests, and the runs holding a slot.
A ledger applies one operation to several buckets all-or-nothing. :func:`apply` is the rule
every ledger follows (the records ledger runs it in Python, the Redis plugin in Lua): keep the
two in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from hermes_core.records import LedgerSpec as LedgerSpec  # declared with the other plugin specs

#: What the limit that refused was.
Limit = Literal["spend_usd", "tokens_per_minute", "requests_per_minute", "concurrent_runs", "unavailable"]
Op = Literal["admit", "reserve", "settle", "release"]
WINDOW_S = 60.0
EPSILON = 1e-9
#: ``Retry-After`` of a spend cap used up by settled spend (an operator has to raise it).
SPENT_WAIT = 3600.0


@dataclass(frozen=True, slots=True)
class BucketLimits:
    """The limits of one bucket, as the ledger applies them (None: unlimited)."""

    key: str
    spend_usd: float | None = None
    tokens_per_minute: int | None = None
    requests_per_minute: int | None = None
    concurrent_runs: int | None = None

    def as_list(self) -> list[float]:
        """Return the limits as numbers, ``-1`` for none (the Lua script's encoding)."""
        return [
            -1.0 if v is None else float(v)
            for v in (self.spend_usd, self.tokens_per_minute, self.requests_per_minute, self.concurrent_runs)
        ]


@dataclass(frozen=True, slots=True)
class Verdict:
    """A ledger's answer: ``ok``, or the bucket and limit that refused and when to try again."""

    ok: bool
    bucket: str | None = None
    limit: Limit | None = None
    retry_after: float = 0.0
    #: No call of any size fits the bucket now: its settled spend reached the cap, or the
    #: minute's settled tokens reached the limit (a refusal of one call too big for the room
    #: left is not). Only such a refusal is worth remembering for the bucket's later calls.
    exhausted: bool = False


OK = Verdict(True)


@dataclass(frozen=True, slots=True)
class LedgerCall:
    """One operation on a ledger.

    :ivar op: ``admit`` (one request, a run slot), ``reserve`` (a model call's worst case),
        ``settle`` (replace a reservation by what it cost; usd 0 and tokens 0 refund it),
        ``release`` (give a run's slot back).
    :ivar run_id: the admitted run (its slot; a reservation renews it).
    :ivar res_id: the reservation (reserve, settle).
    :ivar usd: dollars reserved or settled. :ivar tokens: tokens reserved or settled.
    :ivar ttl_s: how long the reservation or slot lives without news.
    """

    op: Op
    run_id: str
    res_id: str = ""
    usd: float = 0.0
    tokens: int = 0
    ttl_s: float = 300.0


class BudgetLedger(Protocol):
    """Where the buckets live (kernel records, or Redis): every call is all-or-nothing."""

    name: str

    async def apply(self, buckets: Sequence[BucketLimits], call: LedgerCall) -> Verdict:
        """Apply ``call`` to every bucket, or to none when one refuses (``admit``, ``reserve``).

        :raises BudgetUnavailable: the ledger cannot be reached (budgets fail closed).
        """
        ...

    async def read(self, bucket: str) -> dict[str, Any]:
        """Return a bucket's state as :func:`apply` keeps it (``{}``: never charged)."""
        ...

    async def aclose(self) -> None:
        """Let go of connections."""
        ...


def counts_runs(limits: BucketLimits) -> bool:
    """Tell whether admissions change the bucket (it limits requests or concurrent runs)."""
    return limits.requests_per_minute is not None or limits.concurrent_runs is not None


def _prune(state: dict[str, Any], now: float) -> None:
    state["res"] = {k: v for k, v in state.get("res", {}).items() if v[2] > now}
    state["runs"] = {k: v for k, v in state.get("runs", {}).items() if v > now}
    window = int(now // WINDOW_S)
    if state.get("w") != window:
        state["w"], state["wt"], state["wr"] = window, 0, 0


def check(state: dict[str, Any], limits: BucketLimits, call: LedgerCall, now: float) -> Verdict:
    """Tell whether ``call`` fits in ``state`` (pruned first) without changing the counts."""
    _prune(state, now)
    spent = float(state.get("spent", 0.0))
    held_usd = sum(float(v[0]) for v in state["res"].values())
    held_tok = sum(int(v[1]) for v in state["res"].values())
    next_window = (state["w"] + 1) * WINDOW_S - now
    spent_up = limits.spend_usd is not None and spent >= limits.spend_usd - EPSILON
    tokens_up = limits.tokens_per_minute is not None and state["wt"] >= limits.tokens_per_minute
    if call.op == "admit":
        if limits.spend_usd is not None and spent + held_usd >= limits.spend_usd - EPSILON:
            # Room held by calls in flight comes back when they settle (within seconds); spend
            # already settled does not come back.
            wait = 1.0 if held_usd > 0 and spent < limits.spend_usd else SPENT_WAIT
            return Verdict(False, limits.key, "spend_usd", wait, spent_up)
        if limits.tokens_per_minute is not None and state["wt"] + held_tok >= limits.tokens_per_minute:
            return Verdict(False, limits.key, "tokens_per_minute", max(1.0, next_window), tokens_up)
        if limits.requests_per_minute is not None and state["wr"] + 1 > limits.requests_per_minute:
            return Verdict(False, limits.key, "requests_per_minute", max(1.0, next_window))
        if limits.concurrent_runs is not None and call.run_id not in state["runs"]:
            if len(state["runs"]) + 1 > limits.concurrent_runs:
                return Verdict(False, limits.key, "concurrent_runs", 1.0)
    elif call.op == "reserve":
        if limits.spend_usd is not None and spent + held_usd + call.usd > limits.spend_usd + EPSILON:
            wait = 1.0 if held_usd > 0 and spent + call.usd <= limits.spend_usd else SPENT_WAIT
            return Verdict(False, limits.key, "spend_usd", wait, spent_up)
        if (
            limits.tokens_per_minute is not None
            and state["wt"] + held_tok + call.tokens > limits.tokens_per_minute
        ):
            return Verdict(False, limits.key, "tokens_per_minute", max(1.0, next_window), tokens_up)
    return OK


def change(state: dict[str, Any], call: LedgerCall, now: float) -> None:
    """Apply ``call`` to a pruned ``state`` (after :func:`check` said yes)."""
    _prune(state, now)
    if call.op == "admit":
        state["wr"] = int(state["wr"]) + 1
        state["runs"][call.run_id] = now + call.ttl_s
    elif call.op == "reserve":
        state["res"][call.res_id] = [call.usd, call.tokens, now + call.ttl_s]
        if call.run_id in state["runs"]:
            state["runs"][call.run_id] = now + call.ttl_s  # a run that calls is alive
    elif call.op == "settle":
        # What the call cost counts even when its reservation already expired.
        state["res"].pop(call.res_id, None)
        state["spent"] = float(state.get("spent", 0.0)) + call.usd
        state["wt"] = int(state["wt"]) + call.tokens
    elif call.op == "release":
        state["runs"].pop(call.run_id, None)


def undo(state: dict[str, Any], call: LedgerCall, now: float) -> None:
    """Take back an ``admit`` or ``reserve`` this ledger applied to a bucket before another refused."""
    _prune(state, now)
    if call.op == "admit":
        state["wr"] = max(0, int(state["wr"]) - 1)
        state["runs"].pop(call.run_id, None)
    elif call.op == "reserve":
        state["res"].pop(call.res_id, None)
