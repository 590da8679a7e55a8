"""Hooks go through pluggy's caller: its order, its wrappers, its monitoring, with failures kept apart.

Each test drives a real kernel with throwaway plugins and compares what the kernel did with what
pluggy itself does for the same plugins.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Generator
from pathlib import Path
from typing import Any

import pytest

from hermes_core import (
    Kernel,
    PluginError,
    PolicyDecision,
    Session,
    ToolCallInfo,
    ToolCompleted,
    ToolDecision,
    ToolExecuting,
    ToolSpec,
    TurnCompleted,
    hookimpl,
)
from hermes_core.testing import make_kernel

CALLS: list[str] = []

MEMORY = {"storage": {"backend": "memory"}, "titles": {"refine": False}, "model": "mock:echo"}


class Recorder:
    """Implements every called-at-a-moment hook and notes when it was called."""

    def __init__(self, name: str) -> None:
        self.hermes_plugin_name = name

    @hookimpl
    def hermes_tools(self) -> ToolSpec:
        CALLS.append(f"tools:{self.hermes_plugin_name}")
        return ToolSpec(
            name=f"tool_{self.hermes_plugin_name}",
            description="does nothing",
            schema={"type": "object"},
            handler=lambda args, ctx: "ok",
        )

    @hookimpl
    def hermes_lifespan(self, kernel: Kernel) -> contextlib.AbstractAsyncContextManager[None]:
        name = self.hermes_plugin_name

        @contextlib.asynccontextmanager
        async def life() -> AsyncIterator[None]:
            CALLS.append(f"enter:{name}")
            try:
                yield
            finally:
                CALLS.append(f"exit:{name}")

        return life()

    @hookimpl
    def hermes_on_event(self, event: Any) -> None:
        if isinstance(event, TurnCompleted):
            CALLS.append(f"event:{self.hermes_plugin_name}")

    @hookimpl
    def hermes_before_tool_call(self, call: ToolCallInfo) -> PolicyDecision:
        CALLS.append(f"policy:{self.hermes_plugin_name}")
        return PolicyDecision("allow", f"{self.hermes_plugin_name} allows")


class First(Recorder):
    @hookimpl(tryfirst=True)
    def hermes_tools(self) -> ToolSpec:
        return super().hermes_tools()

    @hookimpl(tryfirst=True)
    def hermes_lifespan(self, kernel: Kernel) -> contextlib.AbstractAsyncContextManager[None]:
        return super().hermes_lifespan(kernel)

    @hookimpl(tryfirst=True)
    def hermes_on_event(self, event: Any) -> None:
        super().hermes_on_event(event)

    @hookimpl(tryfirst=True)
    def hermes_before_tool_call(self, call: ToolCallInfo) -> PolicyDecision:
        return super().hermes_before_tool_call(call)


class Last(Recorder):
    @hookimpl(trylast=True)
    def hermes_tools(self) -> ToolSpec:
        return super().hermes_tools()

    @hookimpl(trylast=True)
    def hermes_lifespan(self, kernel: Kernel) -> contextlib.AbstractAsyncContextManager[None]:
        return super().hermes_lifespan(kernel)

    @hookimpl(trylast=True)
    def hermes_on_event(self, event: Any) -> None:
        super().hermes_on_event(event)

    @hookimpl(trylast=True)
    def hermes_before_tool_call(self, call: ToolCallInfo) -> PolicyDecision:
        return super().hermes_before_tool_call(call)


def _of(prefix: str) -> list[str]:
    return [c.split(":", 1)[1] for c in CALLS if c.startswith(prefix + ":")]


async def test_tryfirst_and_trylast_order_holds_at_every_call_site(tmp_path: Path) -> None:
    # Registered: first (tryfirst), a, last (trylast), b. pluggy calls tryfirst, then the most
    # recently registered plain ones, trylast at the end.
    CALLS.clear()
    plugins = [First("first"), Recorder("a"), Last("last"), Recorder("b")]
    kernel = make_kernel(*plugins, entry_points=["mock"], settings=MEMORY)
    expected = ["first", "b", "a", "last"]
    assert _of("tools") == expected
    # pluggy's own call of the same hook is the oracle.
    CALLS.clear()
    kernel.pm.hook.hermes_tools()
    assert _of("tools") == expected
    assert [n for n in kernel.registry.tools if n.startswith("tool_")] == [f"tool_{n}" for n in expected]

    CALLS.clear()
    async with kernel.running():
        assert _of("enter") == expected
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        turn = await session.submit("[[tool tool_a {}]]", owner="t")
        events = [e async for e in turn.events()]
        assert (await turn.outcome).status == "complete"
    assert _of("exit") == list(reversed(expected))
    assert _of("policy") == expected
    (decision,) = [e for e in events if isinstance(e, ToolDecision)]
    assert [s[0] for s in decision.sources if s[0] != "core"] == expected
    assert _of("event") == expected


class Timing:
    """A new-style wrapper around two hooks: it runs once around all implementations."""

    hermes_plugin_name = "timing"

    @hookimpl(wrapper=True)
    def hermes_on_event(self, event: Any) -> Generator[None, list[Any], list[Any]]:
        mark = isinstance(event, TurnCompleted)
        if mark:
            CALLS.append("wrap:in")
        result = yield
        if mark:
            CALLS.append("wrap:out")
        return result

    @hookimpl(wrapper=True)
    def hermes_before_tool_call(self, call: ToolCallInfo) -> Generator[None, list[Any], list[Any]]:
        verdicts = yield
        CALLS.append(f"wrap:saw {len(verdicts)}")
        # A wrapper may change the result: this one overrules every allow.
        return [*verdicts, PolicyDecision("deny", "the wrapper says no")]


async def test_a_hook_wrapper_runs_around_the_call_and_may_change_the_result(tmp_path: Path) -> None:
    CALLS.clear()
    kernel = make_kernel(Recorder("a"), Timing(), Recorder("b"), entry_points=["mock"], settings=MEMORY)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        turn = await session.submit("[[tool tool_a {}]]", owner="t")
        events = [e async for e in turn.events()]
        assert (await turn.outcome).status == "complete"
    assert [c for c in CALLS if c.startswith(("wrap:", "event:"))] == [
        "wrap:saw 2",
        "wrap:in",
        "event:b",
        "event:a",
        "wrap:out",
    ]
    (decision,) = [e for e in events if isinstance(e, ToolDecision)]
    assert decision.decision == "deny"
    by_source = {name: (verdict, reason) for name, verdict, reason in decision.sources}
    assert by_source["timing"] == ("deny", "the wrapper says no")
    assert by_source["a"] == ("allow", "a allows") and by_source["b"] == ("allow", "b allows")
    assert not [e for e in events if isinstance(e, ToolExecuting)]
    (completed,) = [e for e in events if isinstance(e, ToolCompleted)]
    assert completed.is_error and "the wrapper says no" in completed.result_text


class BrokenWrapper:
    hermes_plugin_name = "broken-wrapper"

    @hookimpl(wrapper=True)
    def hermes_before_tool_call(
        self, session: Session, call: ToolCallInfo
    ) -> Generator[None, list[Any], list[Any]]:
        yield
        raise RuntimeError("wrapper bug")


async def test_a_raising_wrapper_is_named_and_counts_as_a_deny(tmp_path: Path) -> None:
    kernel = make_kernel(Recorder("a"), BrokenWrapper(), entry_points=["mock"], settings=MEMORY)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        turn = await session.submit("[[tool tool_a {}]]", owner="t")
        events = [e async for e in turn.events()]
    (decision,) = [e for e in events if isinstance(e, ToolDecision)]
    assert decision.decision == "deny"
    assert ("broken-wrapper", "deny", "policy plugin broken-wrapper failed") in decision.sources


class Both:
    hermes_plugin_name = "both"

    @hookimpl(wrapper=True, specname="hermes_on_event")
    def around(self) -> Generator[None, list[Any], list[Any]]:
        return (yield)

    @hookimpl
    def hermes_on_event(self) -> None:
        return None


def test_a_plugin_cannot_wrap_and_implement_one_hook() -> None:
    with pytest.raises(PluginError, match="both a wrapper and a plain implementation"):
        make_kernel(Both())


class FailingLife:
    def __init__(self, name: str, where: str) -> None:
        self.hermes_plugin_name = name
        self.where = where

    @hookimpl
    def hermes_lifespan(self, kernel: Kernel) -> Any:
        if self.where == "hook":
            raise ValueError(f"{self.hermes_plugin_name} cannot start")
        if self.where == "value":
            return "not a context manager"

        @contextlib.asynccontextmanager
        async def life() -> AsyncIterator[None]:
            if self.where == "enter":
                raise OSError(f"{self.hermes_plugin_name} found no port")
            yield
            raise RuntimeError(f"{self.hermes_plugin_name} failed to stop")

        return life()


async def test_a_failing_lifespan_is_named_and_the_others_start(caplog: pytest.LogCaptureFixture) -> None:
    CALLS.clear()
    plugins = [
        Recorder("early"),
        FailingLife("bad-enter", "enter"),
        FailingLife("bad-hook", "hook"),
        FailingLife("bad-value", "value"),
        FailingLife("bad-exit", "exit"),
        Recorder("late"),
    ]
    kernel = Kernel.create(entry_points=["mock"], plugins=plugins, strict=False, settings=MEMORY)
    with caplog.at_level(logging.ERROR, logger="hermes.plugins"):
        async with kernel.running():
            assert sorted(_of("enter")) == ["early", "late"]
        assert sorted(_of("exit")) == ["early", "late"]
    text = caplog.text
    assert "bad-enter" in text and "found no port" in text
    assert "bad-hook" in text and "cannot start" in text
    assert "bad-value" in text
    assert "bad-exit" in text and "failed to stop" in text


async def test_a_failing_lifespan_stops_a_strict_kernel_naming_it_after_leaving_the_others() -> None:
    CALLS.clear()
    # Registered last, "early" is called first (pluggy's order) and is entered before the failure.
    plugins = [FailingLife("bad-enter", "enter"), Recorder("early")]
    kernel = make_kernel(*plugins, entry_points=["mock"], settings=MEMORY)
    with pytest.raises(PluginError, match=r"bad-enter.*found no port"):
        async with kernel.running():
            pytest.fail("the kernel must not start")
    assert _of("enter") == ["early"]
    assert _of("exit") == ["early"]  # left again


async def test_trace_plugins_logs_every_hook_call(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    class Counter:
        hermes_plugin_name = "counter"

        @hookimpl
        def hermes_on_event(self, event: Any) -> None:
            seen.append(type(event).__name__)

    with caplog.at_level(logging.INFO, logger="hermes.plugins.trace"):
        kernel = Kernel.create(
            entry_points=["mock"],
            plugins=[First("first"), Timing(), Counter()],
            strict=True,
            settings=MEMORY,
            trace_plugins=True,
        )
        async with kernel.running():
            session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
            turn = await session.submit("hi", owner="t")
            assert (await turn.outcome).status == "complete"
    lines = [r.getMessage() for r in caplog.records if r.name == "hermes.plugins.trace"]
    calls = [line for line in lines if line.startswith("call ")]
    # One line per observed event, naming the plugins in the order they are called.
    prefix = "call hermes_on_event(session=Session, event="
    observed = [line.removeprefix(prefix) for line in calls if line.startswith(prefix)]
    assert "TurnStarted" in seen and "TurnCompleted" in seen
    # The mock provider's plugin observes too (it checks a scenario's expected questions).
    assert observed == [f"{name}) -> timing (wrapper), first, counter, mock" for name in seen]
    assert any(line.startswith("call hermes_tools() -> ") for line in calls)
    assert any(line.startswith("call hermes_lifespan(kernel=Kernel) -> first") for line in calls)
    assert len([line for line in lines if line.startswith("done ")]) == len(calls)
    assert "hi" not in "\n".join(lines)  # types only, never values


async def test_without_tracing_nothing_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="hermes.plugins.trace"):
        kernel = make_kernel(First("first"), entry_points=["mock"], settings=MEMORY)
        async with kernel.running():
            pass
    assert not [r for r in caplog.records if r.name == "hermes.plugins.trace"]
