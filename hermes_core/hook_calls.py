"""Call a hook through pluggy's caller while keeping each plugin's result, or failure, apart.

A plain pluggy call stops at the first implementation that raises and hands back one list with
no owners. The kernel needs more: every plugin's record attributed to it (collection hooks), a
verdict per plugin (``hermes_before_tool_call``), and one plugin's failure never keeping the
others from being called. :func:`call_each` gets both by letting pluggy run the call — its
order (``tryfirst`` first, then the most recently registered, ``trylast`` last), its wrappers
(``wrapper=True`` and old-style ``hookwrapper=True``, entered once around the whole call) and
its monitoring (``add_hookcall_monitoring``) — with every plain implementation replaced, for that
one call, by a shield that records what it returned or raised.

A wrapper sees the list of values the implementations returned (``None`` and failures left
out), as in pluggy. When a wrapper changes that list, its version is what the kernel uses.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import CodeType
from typing import Any

import pluggy

TRACE_LOGGER = "hermes.plugins.trace"
trace_log = logging.getLogger(TRACE_LOGGER)


@dataclass(frozen=True, slots=True)
class HookOutcome:
    """What one plugin's implementation of a hook gave back.

    :param plugin: the plugin's registered name (for a value a wrapper added, the wrapper's).
    :param value: what it returned (``None`` when it raised).
    :param error: the exception it raised, if it did.
    """

    plugin: str
    value: Any = None
    error: Exception | None = None


def _is_wrapper(impl: pluggy.HookImpl) -> bool:
    return bool(impl.wrapper or impl.hookwrapper)


def call_each(pm: pluggy.PluginManager, hook_name: str, /, **kwargs: Any) -> list[HookOutcome]:
    """Call every implementation of ``hook_name`` once, in pluggy's order, through pluggy.

    :returns: one outcome per plain implementation in call order; an exception raised by a
        wrapper is one more outcome, attributed to that wrapper's plugin.
    :raises pluggy.HookCallError: the call lacks an argument an implementation needs.
    """
    caller: pluggy.HookCaller = getattr(pm.hook, hook_name)
    impls = caller.get_hookimpls()
    if not impls:
        return []
    # call_extra appends the extra functions to the plain part of pluggy's list, which pluggy
    # runs from the end: kept in the list's order, they run in the order pluggy would run them.
    plain = [impl for impl in impls if not _is_wrapper(impl)]
    outcomes: list[HookOutcome] = []
    shields = [_shield(impl, outcomes) for impl in plain]
    subset = pm.subset_hook_caller(hook_name, [impl.plugin for impl in plain])
    try:
        result = subset.call_extra(shields, kwargs)
    except pluggy.HookCallError:
        raise
    except Exception as exc:  # only a wrapper can raise here: the implementations are shielded
        wrappers = [impl for impl in impls if _is_wrapper(impl)]
        return [*outcomes, HookOutcome(_blame(exc, wrappers), error=exc)]
    return _merge(outcomes, result, [impl for impl in reversed(impls) if _is_wrapper(impl)])


def _shield(impl: pluggy.HookImpl, outcomes: list[HookOutcome]) -> Callable[..., Any]:
    """Wrap one implementation so that pluggy calls it like the original and it never raises."""
    function = impl.function
    plugin = impl.plugin_name

    # functools.wraps sets __wrapped__, so pluggy reads the original's argument names.
    @functools.wraps(function)
    def shielded(*args: Any, **kwargs: Any) -> Any:
        try:
            value = function(*args, **kwargs)
        except Exception as exc:
            outcomes.append(HookOutcome(plugin, error=exc))
            return None
        outcomes.append(HookOutcome(plugin, value))
        return value

    shielded.hermes_plugin = plugin  # type: ignore[attr-defined]  # read by the tracer
    return shielded


def _merge(
    outcomes: list[HookOutcome], result: Any, wrappers: Sequence[pluggy.HookImpl]
) -> list[HookOutcome]:
    """Let a wrapper's change of the result win, keeping owners where the values are the same."""
    produced = [o for o in outcomes if o.error is None and o.value is not None]
    items = result if isinstance(result, list) else [result]
    if len(items) == len(produced) and all(i is o.value for i, o in zip(items, produced, strict=True)):
        return outcomes
    # The outermost wrapper has the last word, so values no plugin returned are credited to it.
    outer = wrappers[0].plugin_name if wrappers else "?"
    kept = [o for o in outcomes if o.error is not None]
    unused = list(produced)
    for item in items:
        match = next((o for o in unused if o.value is item), None)
        if match is not None:
            unused.remove(match)
            kept.append(match)
        elif item is not None:
            kept.append(HookOutcome(outer, item))
    return kept


def _code_of(function: Callable[..., Any]) -> CodeType | None:
    target: Any = inspect.unwrap(function)
    target = getattr(target, "__func__", target)
    code = getattr(target, "__code__", None)
    return code if isinstance(code, CodeType) else None


def _blame(exc: BaseException, wrappers: Sequence[pluggy.HookImpl]) -> str:
    """Name the wrapper whose code raised ``exc`` (the innermost frame that belongs to one)."""
    owners = {code: impl.plugin_name for impl in wrappers if (code := _code_of(impl.function))}
    blamed = "a hook wrapper"
    for frame, _line in traceback.walk_tb(exc.__traceback__):
        blamed = owners.get(frame.f_code, blamed)
    return blamed


def problem_with(pm: pluggy.PluginManager, plugin: object) -> str | None:
    """Return why :func:`call_each` could not call ``plugin`` correctly, or ``None``.

    Calls are isolated by leaving a plugin's plain implementations out of pluggy's list, which
    needs a hashable plugin and no plugin that both wraps a hook and implements it plainly.
    """
    try:
        hash(plugin)
    except TypeError:
        return "a plugin object must be hashable (define __hash__, or use eq=False on a dataclass)"
    for caller in pm.get_hookcallers(plugin) or ():
        mine = [impl for impl in caller.get_hookimpls() if impl.plugin is plugin]
        if any(_is_wrapper(i) for i in mine) and not all(_is_wrapper(i) for i in mine):
            return f"{caller.name} is both a wrapper and a plain implementation in one plugin"
    return None


def _label(impl: pluggy.HookImpl) -> str:
    name = str(getattr(impl.function, "hermes_plugin", impl.plugin_name))
    return f"{name} (wrapper)" if _is_wrapper(impl) else name


def trace_calls(pm: pluggy.PluginManager) -> Callable[[], None]:
    """Log every hook call of ``pm`` to ``hermes.plugins.trace`` at INFO; return the undo function.

    Argument values are never logged (an event may carry a secret), only their types.
    """
    started: list[float] = []

    def before(hook_name: str, impls: Sequence[pluggy.HookImpl], kwargs: Mapping[str, object]) -> None:
        started.append(time.perf_counter())
        args = ", ".join(f"{key}={type(value).__name__}" for key, value in kwargs.items())
        order = ", ".join(_label(impl) for impl in reversed(impls)) or "no implementation"
        trace_log.info("call %s(%s) -> %s", hook_name, args, order)

    def after(
        outcome: pluggy.Result[object],
        hook_name: str,
        impls: Sequence[pluggy.HookImpl],
        kwargs: Mapping[str, object],
    ) -> None:
        took = (time.perf_counter() - started.pop()) * 1000 if started else 0.0
        if outcome.exception is not None:
            error = outcome.exception
            trace_log.info("done %s in %.2f ms: raised %s", hook_name, took, type(error).__name__)
            return
        result = outcome.get_result()
        count = len(result) if isinstance(result, list) else int(result is not None)
        trace_log.info("done %s in %.2f ms: %d result(s)", hook_name, took, count)

    return pm.add_hookcall_monitoring(before, after)
