"""Budgets in the kernel's turn loop (docs/reference/budgets.md): reserve before each model call,
settle from the reported usage, refund on error, stop a turn at the next call over its budget,
charge a child's calls to the root's buckets; the records ledger under concurrency."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_core import ChargeTo, ModelPrice, PriceSource, ProviderError, hookimpl
from hermes_core.budget_ledger import BucketLimits, LedgerCall
from hermes_core.budget_records import RecordsLedger
from hermes_core.providers import FinishChunk, TextChunk, ToolCallChunk, ToolCallRequest, UsageChunk
from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel
from tests.timing import within_one_budget_minute

# $1 per million input tokens, $2 per million output tokens: easy sums.
PRICES = {"fake": {"input": 1_000_000.0, "output": 2_000_000.0}}  # $1 / $2 per token


def kernel_with(provider: FakeProvider, budgets: dict[str, Any], **extra: Any) -> Any:
    return make_kernel(
        FakeProviderPlugin(provider),
        settings={"model": "fake:model", "budgets": {"prices": PRICES, **budgets}, **extra},
    )


def replies(*usages: tuple[int, int]) -> FakeProvider:
    left = list(usages)

    def script(request: Any) -> list[Any]:
        usage = left.pop(0)
        return [TextChunk("ok"), UsageChunk(usage[0], usage[1]), FinishChunk("stop")]

    return FakeProvider(script)


async def bucket(kernel: Any, name: str) -> dict[str, Any]:
    state: dict[str, Any] = await kernel.budgets.ledger().read(name)
    return state


async def test_a_call_reserves_its_worst_case_and_settles_what_it_used(workspace: Path) -> None:
    provider = replies((10, 5))
    kernel = kernel_with(provider, {"key": {"spend_usd": 1000.0}, "max_output_tokens": 64})
    async with kernel.running():
        session = await kernel.open_session(source="test", owner="t", cwd=workspace)
        seen: list[dict[str, Any]] = []

        async def watch(request: Any) -> None:
            seen.append(await bucket(kernel, "key:local"))

        original = provider.script
        provider.script = lambda req: (asyncio.ensure_future(watch(req)), original(req))[1]
        turn = await session.submit("hello", owner="t")
        outcome = await turn.outcome
        assert outcome.reason == "stop"
        # The request carried the output limit that was reserved.
        assert provider.requests[0].options["max_tokens"] == 64
        state = await bucket(kernel, "key:local")
        assert state["spent"] == pytest.approx(10 * 1 + 5 * 2)  # settled from the usage
        assert state["res"] == {} and state["runs"] == {}  # nothing held after the turn
        await asyncio.sleep(0)
        held = seen[0]["res"]
        assert len(held) == 1
        usd, tokens, _ = next(iter(held.values()))
        assert tokens >= 64 and usd >= 64 * 2  # the worst case: the whole output allowed


async def test_a_turn_over_its_budget_stops_at_the_next_model_call(workspace: Path) -> None:
    calls = 0

    def script(request: Any) -> list[Any]:
        nonlocal calls
        calls += 1
        call = ToolCallRequest(f"c{calls}", "todo", '{"todos": []}')
        return [ToolCallChunk(call), UsageChunk(40, 10), FinishChunk("tool_calls")]

    provider = FakeProvider(script)
    # Each call reserves ~(input + 16 out); settles 40 + 2*10 = $60. Cap $150: the third call
    # no longer fits.
    kernel = kernel_with(provider, {"session": {"spend_usd": 150.0}, "max_output_tokens": 16})
    async with kernel.running():
        session = await kernel.open_session(source="test", owner="t", cwd=workspace)
        turn = await session.submit("loop", owner="t")
        outcome = await turn.outcome
    assert outcome.reason == "budget_exceeded" and outcome.status == "error"
    assert outcome.retry_after is not None and outcome.retry_after > 0
    assert "session:" in (outcome.message or "") and "spend_usd" in (outcome.message or "")
    assert 1 <= calls <= 2
    state = await bucket(kernel, f"session:{session.id}")
    assert state["spent"] <= 150.0 and state["res"] == {}


async def test_a_failed_call_is_refunded(workspace: Path) -> None:
    provider = FakeProvider(lambda req: [ProviderError("auth", "no key")])
    kernel = kernel_with(provider, {"key": {"spend_usd": 10_000.0}})
    async with kernel.running():
        session = await kernel.open_session(source="test", owner="t", cwd=workspace)
        outcome = await (await session.submit("x", owner="t")).outcome
        assert outcome.reason == "provider_error"
        state = await bucket(kernel, "key:local")
    assert state.get("spent", 0.0) == 0.0 and state["res"] == {} and state["runs"] == {}


async def test_requests_per_minute_refuses_the_next_turn_with_a_retry_after(workspace: Path) -> None:
    provider = replies((1, 1), (1, 1), (1, 1))
    kernel = kernel_with(provider, {"tenant": {"requests_per_minute": 2}})
    async with kernel.running():
        session = await kernel.open_session(source="test", owner="t", cwd=workspace)
        await within_one_budget_minute()
        first = await (await session.submit("a", owner="t")).outcome
        second = await (await session.submit("b", owner="t")).outcome
        third = await (await session.submit("c", owner="t")).outcome
    assert (first.reason, second.reason, third.reason) == ("stop", "stop", "budget_exceeded")
    assert third.retry_after is not None and 0 < third.retry_after <= 60
    assert len(provider.requests) == 2  # the refused turn never called the model


async def test_a_charge_names_the_key_and_tenant_buckets(workspace: Path) -> None:
    provider = replies((3, 1))
    kernel = kernel_with(
        provider,
        {"keys": {"k1": {"spend_usd": 100_000.0}}, "tenants": {"acme": {"tokens_per_minute": 100_000}}},
    )
    async with kernel.running():
        session = await kernel.open_session(source="test", owner="t", cwd=workspace)
        charge = ChargeTo(key_id="k1", tenant="acme")
        outcome = await (await session.submit("hi", owner="t", charge=charge)).outcome
        assert outcome.reason == "stop"
        key = await bucket(kernel, "key:k1")
        tenant = await bucket(kernel, "tenant:acme")
        other = await bucket(kernel, "key:local")
    assert key["spent"] == pytest.approx(3 + 2)
    assert tenant["wt"] == 4  # tokens counted in this minute's window
    assert other == {}


async def test_concurrent_reservations_on_the_records_ledger_never_pass_the_cap() -> None:
    kernel = make_kernel(FakeProviderPlugin(FakeProvider()), settings={"model": "fake:model"})
    async with kernel.running():
        ledger = RecordsLedger(kernel.records.space("budgets"))
        limits = [BucketLimits("key:k", spend_usd=1.0), BucketLimits("tenant:t", spend_usd=5.0)]

        async def one(n: int) -> bool:
            verdict = await ledger.apply(limits, LedgerCall("reserve", "r", f"v{n}", 0.1, 10))
            return verdict.ok

        admitted = await asyncio.gather(*(one(n) for n in range(50)))
        assert sum(admitted) == 10
        state = await ledger.read("key:k")
        tenant = await ledger.read("tenant:t")
    assert len(state["res"]) == 10 and len(tenant["res"]) == 10  # refusals left nothing behind


async def test_expired_reservations_stop_counting() -> None:
    now = [1000.0]
    kernel = make_kernel(FakeProviderPlugin(FakeProvider()), settings={"model": "fake:model"})
    async with kernel.running():
        ledger = RecordsLedger(kernel.records.space("budgets"), clock=lambda: now[0])
        limits = [BucketLimits("key:k", spend_usd=1.0, concurrent_runs=1)]
        assert (await ledger.apply(limits, LedgerCall("admit", "run1", ttl_s=30))).ok
        assert (await ledger.apply(limits, LedgerCall("reserve", "run1", "v1", 0.9, 10, ttl_s=30))).ok
        refused = await ledger.apply(limits, LedgerCall("admit", "run2", ttl_s=30))
        assert not refused.ok and refused.limit == "concurrent_runs"
        now[0] += 31  # the instance holding them died: nothing renews them
        assert (await ledger.apply(limits, LedgerCall("admit", "run2", ttl_s=30))).ok
        assert (await ledger.apply(limits, LedgerCall("reserve", "run2", "v2", 0.9, 10, ttl_s=30))).ok


class TablePrices:
    """A throwaway ``hermes_price_sources`` plugin (what the ``prices`` plugin's table does)."""

    hermes_plugin_name = "table-prices"

    def __init__(self) -> None:
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    @hookimpl
    def hermes_price_sources(self) -> PriceSource:
        def lookup(provider: str, base_url: str | None, models: tuple[str, ...]) -> dict[str, ModelPrice]:
            self.asked.append((provider, models))
            return {"model": ModelPrice(input=2_000_000.0, output=3_000_000.0)}

        return PriceSource(name="table", summary="test prices", lookup=lookup)


async def test_without_a_configured_price_the_price_tables_are_used(workspace: Path) -> None:
    table = TablePrices()
    kernel = make_kernel(
        FakeProviderPlugin(replies((4, 2))),
        table,
        settings={"model": "fake:model", "budgets": {"key": {"spend_usd": 1e9}, "max_output_tokens": 8}},
    )
    async with kernel.running():
        session = await kernel.open_session(source="test", owner="t", cwd=workspace)
        assert (await (await session.submit("hi", owner="t")).outcome).reason == "stop"
        state = await bucket(kernel, "key:local")
    assert table.asked == [("fake", ("model",))]  # looked up once, then kept
    assert state["spent"] == pytest.approx(4 * 2 + 2 * 3)


async def test_the_first_calls_reservation_runs_while_the_prompt_is_stored(workspace: Path) -> None:
    """The reservation's round trip overlaps the user row's write (it is not one more wait before
    the first token), and the request still goes out only once the reservation is held."""

    writing = asyncio.Event()
    order: list[str] = []

    # Held until the prompt's write has begun: a reservation made before the write would wait
    # here for ever.
    plugin = _gated_ledger(order, lambda call: writing if call.op == "reserve" else None)

    def script(request: Any) -> list[Any]:
        order.append("request")
        return [TextChunk("ok"), UsageChunk(10, 5), FinishChunk("stop")]

    provider = FakeProvider(script)
    kernel = make_kernel(
        FakeProviderPlugin(provider),
        plugin,
        settings={"model": "fake:model", "budgets": {"prices": PRICES, "key": {"spend_usd": 1000.0}}},
    )
    async with kernel.running():
        storage = kernel.storage
        for name in ("create_session", "append_rows"):
            original = getattr(storage, name)

            async def wrapped(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                writing.set()
                return await _original(*args, **kwargs)

            setattr(storage, name, wrapped)
        session = await kernel.open_session(source="test", owner="t", cwd=workspace)
        outcome = await (await session.submit("hello", owner="t")).outcome
    assert outcome.reason == "stop", outcome
    assert order == ["reserve", "request", "settle"]


def test_the_input_estimate_counts_the_tools_json_and_follows_a_changed_schema() -> None:
    import json

    from hermes_core.providers import ChatMessage, ChatRequest, ToolSchema
    from hermes_core.turn.budget import estimate_input

    params = [{"type": "object", "properties": {"path": {"type": "string", "é": n}}} for n in range(3)]
    tools = tuple(ToolSchema(f"tool{n}", "d" * n, params[n]) for n in range(3))
    request = ChatRequest("m", (ChatMessage("user", "hello"),), tools=tools, system="sys")

    def expected(req: ChatRequest) -> int:
        chars = len("sys") + len("hello") + 8 + len(json.dumps([t.parameters for t in req.tools]))
        chars += sum(len(t.name) + len(t.description) for t in req.tools)
        return -(-chars // 4) + 1

    assert estimate_input(request) == estimate_input(request) == expected(request)
    # The same tools built again for the next call (the registry keeps each schema object).
    again = ChatRequest(
        "m",
        request.messages,
        tools=tuple(ToolSchema(t.name, t.description, t.parameters) for t in tools),
        system="sys",
    )
    assert estimate_input(again) == expected(request)
    bigger = {**params[0], "description": "x" * 400}  # a tool whose schema changed is a new object
    changed = ChatRequest(
        "m", request.messages, tools=(ToolSchema("tool0", "", bigger), *tools[1:]), system="sys"
    )
    assert estimate_input(changed) == expected(changed) > expected(request)


async def test_a_calls_settlement_goes_to_the_ledger_beside_its_reply_and_ends_before_the_turn(
    workspace: Path,
) -> None:
    """The reply is stored while the call's charge is being settled (on SQLite both reach the
    database thread in one hand-off), and the turn still ends only once the charge is counted;
    a tool round's next reservation comes after the previous call's settlement."""

    replying = asyncio.Event()
    order: list[str] = []

    # The final call's settlement is held until its reply is being stored: a turn that waits for
    # the settlement before storing the reply would wait here for ever.
    plugin = _gated_ledger(
        order, lambda call: replying if call.op == "settle" and order.count("settle") == 1 else None
    )

    calls = 0

    def script(request: Any) -> list[Any]:
        nonlocal calls
        calls += 1
        order.append("request")
        if calls == 1:
            call = ToolCallRequest("c1", "todo", '{"todos": []}')
            return [ToolCallChunk(call), UsageChunk(10, 5), FinishChunk("tool_calls")]
        return [TextChunk("ok"), UsageChunk(10, 5), FinishChunk("stop")]

    provider = FakeProvider(script)
    kernel = make_kernel(
        FakeProviderPlugin(provider),
        plugin,
        settings={"model": "fake:model", "budgets": {"prices": PRICES, "key": {"spend_usd": 1000.0}}},
    )
    async with kernel.running():
        storage = kernel.storage

        def noting(original: Any) -> Any:
            async def append(session_id: str, rows: Any, *args: Any, **kwargs: Any) -> Any:
                if any(r.role == "assistant" and r.content == "ok" for r in rows):
                    order.append("reply")
                    replying.set()
                return await original(session_id, rows, *args, **kwargs)

            return append

        # The reply is stored with the usage total where storage can (AppendUpdates).
        name = "append_rows_and_update" if hasattr(storage, "append_rows_and_update") else "append_rows"
        setattr(storage, name, noting(getattr(storage, name)))
        session = await kernel.open_session(source="test", owner="t", cwd=workspace)
        outcome = await (await session.submit("hello", owner="t")).outcome
        assert order == ["reserve", "request", "settle", "reserve", "request", "reply", "settle"]
    assert outcome.reason == "stop", outcome


def _gated_ledger(order: list[str], gate: Callable[[LedgerCall], asyncio.Event | None]) -> object:
    """A plugin whose budget ledger admits every call, noting each call's op in ``order``; a call
    for which ``gate`` names an event waits for that event first (at most 5 s, scaled)."""
    from hermes_core import LedgerSpec, Verdict
    from tests.timing import scaled

    class GatedLedger:
        name = "gated"

        async def apply(self, buckets: Any, call: LedgerCall) -> Verdict:
            event = gate(call)
            if event is not None:
                await asyncio.wait_for(event.wait(), scaled(5))
            order.append(call.op)
            return Verdict(True)

        async def read(self, bucket: str) -> dict[str, Any]:
            return {}

        async def aclose(self) -> None:
            return None

    class Plugin:
        @hookimpl
        def hermes_budget_ledgers(self) -> LedgerSpec:
            return LedgerSpec(name="gated", factory=lambda kernel: GatedLedger())

    return Plugin()
