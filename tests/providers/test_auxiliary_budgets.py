"""The model calls the kernel makes outside a turn are budgeted like a turn's
(docs/reference/budgets.md#outside-a-turn): title refinement and ``/compress`` reserve their
worst case in the session's key, tenant and session buckets, settle from the reported usage,
are refused before the call when it does not fit, and refund a call that fails.

Everything goes through the ``openai`` provider against a fake upstream that reports known
usage: 50 prompt and 40 completion tokens per call, priced so a call costs :data:`CALL_USD`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hermes_core import BudgetExceeded, Kernel, ProviderError
from hermes_core.testing import make_kernel
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream
from tests.providers.vendors import OPENAI, delta, openai_error, usage
from tests.timing import eventually, scaled

PATH = "/v1/chat/completions"
PRICE_IN, PRICE_OUT = 1.0, 1000.0  # dollars per million tokens
CALL_USD = (50 * PRICE_IN + 40 * PRICE_OUT) / 1_000_000  # 0.04005
MAX_OUT = 100  # a reservation holds about 0.1 (100 output tokens at $1000 per million)


def kernel_for(tmp_path: Path, up: FakeUpstream, session_cap: float, refine: bool, **extra: Any) -> Kernel:
    (tmp_path / "data").mkdir(exist_ok=True)
    settings: dict[str, Any] = {
        "data_dir": str(tmp_path / "data"),
        "model": f"openai:{OPENAI.model}",
        "providers": {
            "openai": {
                "api_key": OPENAI.key,
                "base_url": f"{up.url}/v1",
                "models": [{"id": OPENAI.model, "context_window": 128000}],
            }
        },
        "agent": {"provider_retries": 0},
        "titles": {"refine": refine},
        "budgets": {
            "max_output_tokens": MAX_OUT,
            "key": {"spend_usd": 10.0},
            "tenant": {"spend_usd": 10.0},
            "session": {"spend_usd": session_cap},
            "prices": {f"openai/{OPENAI.model}": {"input": PRICE_IN, "output": PRICE_OUT}},
        },
    }
    return make_kernel(entry_points=["openai", "tools"], settings={**settings, **extra})


class Upstream:
    """Answers every call with known usage; records each body's purpose-revealing messages."""

    def __init__(self, up: FakeUpstream) -> None:
        self.up = up
        self.bodies: list[dict[str, Any]] = []
        up.on("POST", PATH, self._chat)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.bodies.append(self.up.requests[-1].body)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for frame in (
            delta(role="assistant", content=""),
            delta(content="A Better Title"),
            delta(finish_reason="stop"),
            usage(50, 40),
            OPENAI_DONE,
        ):
            await response.write(frame)
        await response.write_eof()
        return response


async def spent(kernel: Kernel, bucket: str) -> dict[str, Any]:
    return await kernel.budgets.ledger().read(bucket)


async def two_turns(kernel: Kernel, workspace: Path) -> Any:
    session = await kernel.open_session(source="tui", owner="t", cwd=workspace)
    for text in ("first question", "second question"):
        turn = await session.submit(text, owner="t")
        outcome = await turn.outcome
        assert outcome.status == "complete", outcome
    return session


async def test_a_title_refinement_is_charged_to_the_sessions_buckets(tmp_path: Path) -> None:
    async with FakeUpstream() as up:
        upstream = Upstream(up)
        kernel = kernel_for(tmp_path, up, session_cap=10.0, refine=True)
        async with kernel.running():
            session = await kernel.open_session(source="tui", owner="t", cwd=tmp_path)
            turn = await session.submit("name this conversation please", owner="t")
            assert (await turn.outcome).status == "complete"

            async def refined() -> bool:
                record = await kernel.storage.get_session(session.id)
                return record is not None and record.title_origin == "refined"

            await eventually(refined, timeout=scaled(20), what="the refined title")
            assert len(upstream.bodies) == 2  # the turn's call and the title's
            # The title call carries its own output limit, which is what it reserved.
            assert upstream.bodies[1].get("max_tokens") == 256, upstream.bodies[1]
            for bucket in ("key:local", "tenant:default", f"session:{session.id}"):

                async def settled(bucket: str = bucket) -> dict[str, Any] | None:
                    state = await spent(kernel, bucket)
                    return state if state.get("res") == {} else None

                state = await eventually(settled, timeout=scaled(10), what=bucket)
                assert state["spent"] == pytest.approx(2 * CALL_USD), (bucket, state)


async def test_compress_is_charged_when_it_fits(tmp_path: Path) -> None:
    async with FakeUpstream() as up:
        upstream = Upstream(up)
        kernel = kernel_for(tmp_path, up, session_cap=10.0, refine=False)
        async with kernel.running():
            session = await two_turns(kernel, tmp_path)
            result = await session.compress()
            assert result.summary_row_id is not None
            assert len(upstream.bodies) == 3
            for bucket in ("key:local", "tenant:default", f"session:{session.id}"):
                state = await spent(kernel, bucket)
                assert state["spent"] == pytest.approx(3 * CALL_USD), (bucket, state)
                assert state["res"] == {}


async def test_compress_over_the_session_budget_is_refused_before_the_call(tmp_path: Path) -> None:
    async with FakeUpstream() as up:
        upstream = Upstream(up)
        # Two turns fit (each holds ~0.1 and settles 0.04); the summary's ~0.1 on top of 0.08 does not.
        kernel = kernel_for(tmp_path, up, session_cap=0.15, refine=False)
        async with kernel.running():
            session = await two_turns(kernel, tmp_path)
            before = [r.id for r in await session.history()]
            with pytest.raises(BudgetExceeded) as refused:
                await session.compress()
            assert refused.value.bucket == f"session:{session.id}"
            assert refused.value.limit == "spend_usd"
            assert len(upstream.bodies) == 2  # no summary call was made
            assert [r.id for r in await session.history()] == before  # nothing changed
            state = await spent(kernel, f"session:{session.id}")
            assert state["spent"] == pytest.approx(2 * CALL_USD) and state["res"] == {}


async def test_a_failing_auxiliary_call_refunds_its_reservation(tmp_path: Path) -> None:
    async with FakeUpstream() as up:
        upstream = Upstream(up)
        kernel = kernel_for(tmp_path, up, session_cap=10.0, refine=False)
        async with kernel.running():
            session = await two_turns(kernel, tmp_path)
            bucket = f"session:{session.id}"
            held_during: list[dict[str, Any]] = []

            async def failing(request: web.Request) -> web.StreamResponse:
                held_during.append(await spent(kernel, bucket))  # while the call is in flight
                return web.json_response(openai_error("invalid_request_error", "no"), status=400)

            up.on("POST", PATH, failing)
            with pytest.raises(ProviderError):
                await session.compress()
            [during] = held_during
            assert len(during["res"]) == 1  # the summary call's worst case was held
            for name in ("key:local", "tenant:default", bucket):
                state = await spent(kernel, name)
                assert state["res"] == {}, (name, state)  # and given back
                assert state["spent"] == pytest.approx(2 * CALL_USD), (name, state)
            assert len(upstream.bodies) == 2


async def test_automatic_compaction_is_charged_to_the_turns_buckets(tmp_path: Path) -> None:
    async with FakeUpstream() as up:
        upstream = Upstream(up)
        # Every turn after the first compacts first.
        kernel = kernel_for(tmp_path, up, 10.0, False, compression={"auto_threshold": 0.000001})
        async with kernel.running():
            session = await two_turns(kernel, tmp_path)
            assert (await session.history())[0].display_kind == "summary"
            assert len(upstream.bodies) == 3  # the first turn, the summary, the second turn
            for bucket in ("key:local", "tenant:default", f"session:{session.id}"):
                state = await spent(kernel, bucket)
                assert state["spent"] == pytest.approx(3 * CALL_USD), (bucket, state)
                assert state["res"] == {}


async def test_a_call_too_big_for_a_cap_does_not_refuse_the_next_small_one(tmp_path: Path) -> None:
    # $100 of output asked against $10 caps: that call never fits, but the buckets are not used
    # up, so the next ordinary turn is reserved as usual instead of refused from memory.
    async with FakeUpstream() as up:
        upstream = Upstream(up)
        kernel = kernel_for(tmp_path, up, session_cap=10.0, refine=False)
        async with kernel.running():
            session = await kernel.open_session(source="tui", owner="t", cwd=tmp_path)
            big = await session.submit("a long essay", owner="t", model_options={"max_tokens": 100_000})
            refused = await big.outcome
            assert refused.status != "complete" and refused.reason == "budget_exceeded", refused
            small = await session.submit("a short answer", owner="t")
            outcome = await small.outcome
            assert outcome.status == "complete", outcome
            assert len(upstream.bodies) == 1
