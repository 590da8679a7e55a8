"""Provider errors and retries (docs/reference/core.md#provider-errors-and-retries), with a scripted
provider."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hermes_core import FinishChunk, ProviderError, Retrying, TextChunk, UsageChunk
from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel
from tests.core.conftest import collect


def scripted(*steps: Any) -> FakeProvider:
    """Each call takes the next step: an exception to raise (after optional chunks) or chunks."""
    calls = iter(steps)

    def script(_req: Any) -> Iterator[Any]:
        step = next(calls)
        items = step if isinstance(step, list) else [step]
        for item in items:
            if isinstance(item, BaseException):
                raise item
            yield item

    return FakeProvider(script)


def kernel_with(provider: FakeProvider, **agent: Any) -> Any:
    return make_kernel(FakeProviderPlugin(provider), settings={"model": "fake:model", "agent": agent})


async def test_rate_limit_is_retried_then_succeeds(workspace: Path) -> None:
    provider = scripted(
        ProviderError("rate_limit", "slow down", retryable=True, retry_after=0.05),
        [TextChunk("fine"), UsageChunk(3, 1), FinishChunk("stop")],
    )
    kernel = kernel_with(provider, provider_retries=2)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=workspace)
        events = await collect(await session.submit("hi", owner="t"))
        retries = [e for e in events if isinstance(e, Retrying)]
        assert [(r.attempt, r.wait_s, r.kind) for r in retries] == [(1, 0.05, "rate_limit")]
        assert events[-1].outcome.reason == "stop" and events[-1].text == "fine"
        assert len(provider.requests) == 2


async def test_retries_are_bounded_then_the_turn_fails(workspace: Path) -> None:
    err = ProviderError("upstream", "500 from upstream", retryable=True, retry_after=0.01)
    provider = scripted(err, err, err, err)
    kernel = kernel_with(provider, provider_retries=2)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=workspace)
        events = await collect(await session.submit("hi", owner="t"))
        assert len([e for e in events if isinstance(e, Retrying)]) == 2
        outcome = events[-1].outcome
        assert (outcome.status, outcome.reason, outcome.error_kind) == ("error", "provider_error", "upstream")
        assert outcome.retryable and not outcome.partial
        assert len(provider.requests) == 3


async def test_total_retry_wait_is_capped(workspace: Path) -> None:
    err = ProviderError("rate_limit", "wait a long time", retryable=True, retry_after=30)
    provider = scripted(err, err, err)
    kernel = kernel_with(provider, provider_retries=2, provider_retry_max_wait_s=0.1)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=workspace)
        events = await collect(await session.submit("hi", owner="t"))
        waits = [e.wait_s for e in events if isinstance(e, Retrying)]
        assert sum(waits) <= 0.1 + 1e-9 and waits[0] == 0.1
        assert events[-1].outcome.reason == "provider_error"


async def test_auth_and_network_errors_are_not_retried(workspace: Path) -> None:
    for kind in ("auth", "network"):
        provider = scripted(ProviderError(kind, f"{kind} broke", retryable=False), [TextChunk("never")])  # type: ignore[arg-type]
        kernel = kernel_with(provider, provider_retries=2)
        async with kernel.running():
            session = await kernel.open_session(source="embed", owner="t", cwd=workspace)
            events = await collect(await session.submit("hi", owner="t"))
            assert not [e for e in events if isinstance(e, Retrying)]
            assert events[-1].outcome.error_kind == kind
            assert len(provider.requests) == 1


async def test_error_after_a_delta_fails_at_once_as_partial(workspace: Path) -> None:
    provider = scripted(
        [TextChunk("half"), ProviderError("upstream", "cut", retryable=True)], [TextChunk("x")]
    )
    kernel = kernel_with(provider, provider_retries=2)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=workspace)
        events = await collect(await session.submit("hi", owner="t"))
        assert not [e for e in events if isinstance(e, Retrying)]
        assert events[-1].outcome.partial is True
        assert len(provider.requests) == 1
        assert events[-1].text == "half"
        assert [r.content for r in await session.history()] == ["hi", "half"]


async def test_unexpected_provider_exception_is_a_crash_not_a_hang(workspace: Path) -> None:
    provider = scripted(RuntimeError("boom"), [TextChunk("ok"), FinishChunk("stop")])
    kernel = kernel_with(provider)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=workspace)
        events = await collect(await session.submit("hi", owner="t"))
        assert (events[-1].outcome.status, events[-1].outcome.reason) == ("error", "tool_crash")
        assert (await (await session.submit("again", owner="t")).outcome).reason == "stop"


async def test_secrets_are_redacted_from_error_messages(workspace: Path) -> None:
    provider = scripted(ProviderError("auth", "bad key sk-abcdefghijklmnopqrstuvwxyz012345", retryable=False))
    kernel = kernel_with(provider)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=workspace)
        events = await collect(await session.submit("hi", owner="t"))
        assert "sk-abcdefghijklmnop" not in (events[-1].outcome.message or "")
        assert "[REDACTED]" in (events[-1].outcome.message or "")


async def test_agent_build_failure_for_a_vanished_model(workspace: Path) -> None:
    provider = FakeProvider(models=("model",))
    kernel = kernel_with(provider)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=workspace)
        # The stored choice names a model the provider no longer lists (not persisted yet: memory).
        await session.update_record(model="fake:gone")
        events = await collect(await session.submit("hi", owner="t"))
        assert events[0].model == "fake:gone"
        assert (events[-1].outcome.status, events[-1].outcome.reason) == ("error", "agent_build")
