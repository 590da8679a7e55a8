"""``call_each`` prepares a hook's call once per set of implementations (issue #30): the
prepared call must follow registrations and keep nested calls' outcomes apart."""

from __future__ import annotations

import warnings
from typing import Any

import pluggy

from hermes_core.hook_calls import HookOutcome, call_each

spec = pluggy.HookspecMarker("cachetest")
impl = pluggy.HookimplMarker("cachetest")


class Spec:
    @spec
    def ping(self, depth: int) -> Any:
        """A hook whose implementations may call it again."""


class Echo:
    def __init__(self, name: str, pm: pluggy.PluginManager | None = None, fail: bool = False) -> None:
        self.name, self.pm, self.fail = name, pm, fail
        self.inner: list[list[HookOutcome]] = []

    @impl
    def ping(self, depth: int) -> str:
        if self.pm is not None and depth == 0:
            self.inner.append(call_each(self.pm, "ping", depth=1))
        if self.fail:
            raise RuntimeError(f"{self.name} failed")
        return f"{self.name}@{depth}"


def manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("cachetest")
    pm.add_hookspecs(Spec)
    return pm


def summary(outcomes: list[HookOutcome]) -> list[tuple[str, Any, str | None]]:
    return [(o.plugin, o.value, str(o.error) if o.error else None) for o in outcomes]


def test_a_prepared_call_follows_registrations() -> None:
    pm = manager()
    pm.register(Echo("a"), name="a")
    assert summary(call_each(pm, "ping", depth=0)) == [("a", "a@0", None)]
    pm.register(Echo("b"), name="b")
    assert summary(call_each(pm, "ping", depth=0)) == [("b", "b@0", None), ("a", "a@0", None)]
    pm.unregister(name="a")
    assert summary(call_each(pm, "ping", depth=0)) == [("b", "b@0", None)]


def test_nested_calls_keep_their_outcomes_apart() -> None:
    pm = manager()
    outer = Echo("outer", pm)
    pm.register(outer, name="outer")
    pm.register(Echo("bad", fail=True), name="bad")
    got = call_each(pm, "ping", depth=0)
    assert summary(got) == [("bad", None, "bad failed"), ("outer", "outer@0", None)]
    assert [summary(x) for x in outer.inner] == [[("bad", None, "bad failed"), ("outer", "outer@1", None)]]


def test_a_missing_argument_is_still_pluggys_error() -> None:
    pm = manager()
    pm.register(Echo("a"), name="a")
    call_each(pm, "ping", depth=0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pluggy also warns that the argument is missing
            call_each(pm, "ping")
    except pluggy.HookCallError as exc:
        assert "depth" in str(exc)
    else:
        raise AssertionError("a call without its argument must fail")


def test_monitoring_added_after_a_call_was_prepared_sees_the_next_calls() -> None:
    """A plain hook's prepared call skips pluggy's loop only while no monitoring is added: a
    monitor added later (``hermes --trace-plugins``) sees every call, in the same order."""
    pm = manager()
    pm.register(Echo("a"), name="a")
    pm.register(Echo("b", fail=True), name="b")
    expected = [("b", None, "b failed"), ("a", "a@0", None)]
    assert summary(call_each(pm, "ping", depth=0)) == expected
    seen: list[list[str]] = []
    undo = pm.add_hookcall_monitoring(
        lambda name, impls, kwargs: seen.append([i.plugin_name for i in impls]), lambda *args: None
    )
    assert summary(call_each(pm, "ping", depth=0)) == expected
    assert len(seen) == 1 and len(seen[0]) == 2
    undo()
    assert summary(call_each(pm, "ping", depth=0)) == expected
    assert len(seen) == 1
