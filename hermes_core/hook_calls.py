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

import contextvars
import functools
import importlib
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
    prepared = _prepare(pm, caller, impls)
    outcomes: list[HookOutcome] = []
    token = _OUTCOMES.set(outcomes)
    try:
        result = prepared.call(kwargs)
    except pluggy.HookCallError:
        raise
    except Exception as exc:  # only a wrapper can raise here: the implementations are shielded
        return [*outcomes, HookOutcome(_blame(exc, prepared.wrappers), error=exc)]
    finally:
        _OUTCOMES.reset(token)
    return _merge(outcomes, result, prepared.outer)


# The outcomes list of the innermost call_each running in this thread or task: a shield made
# once per implementation records into the list of the call that is running it (a hook may call
# itself again, e.g. an observer's failure reported as an event).
_OUTCOMES: contextvars.ContextVar[list[HookOutcome]] = contextvars.ContextVar("hermes_hook_outcomes")


class _Prepared:
    """One hook's call made ready once per set of implementations, not once per call.

    A call built the plain way costs, per call, a subset caller and per implementation a shield
    and a pluggy ``HookImpl`` (which inspects the shield's signature): most of an event's
    delivery to ``hermes_on_event`` (issue #30 measured ~6% of the API server's loop in a burst).
    The list handed to pluggy is the one ``call_extra`` builds: the shields in the order of the
    plain implementations, then the wrappers, through the manager's hook execution (so its
    monitoring sees the call).
    """

    __slots__ = ("call", "impls", "outer", "wrappers")

    call: Callable[[dict[str, Any]], Any]

    def __init__(
        self, pm: pluggy.PluginManager, caller: pluggy.HookCaller, impls: list[pluggy.HookImpl]
    ) -> None:
        self.impls = list(impls)
        plain = [impl for impl in impls if not _is_wrapper(impl)]
        self.wrappers = [impl for impl in impls if _is_wrapper(impl)]
        self.outer = list(reversed(self.wrappers))
        shields = [_shield(impl) for impl in plain]
        execute = getattr(pm, "_hookexec", None)
        opts: Any = {
            "wrapper": False,
            "hookwrapper": False,
            "optionalhook": False,
            "trylast": False,
            "tryfirst": False,
            "specname": None,
        }
        defaults = getattr(caller.spec, "kwargdefaults", None) if caller.spec else None
        if execute is None or caller.is_historic() or defaults:
            subset = pm.subset_hook_caller(caller.name, [impl.plugin for impl in plain])
            self.call = functools.partial(subset.call_extra, shields)
            return
        ready = [pluggy.HookImpl(None, "<temp>", shield, opts) for shield in shields] + self.wrappers
        firstresult = bool(caller.spec.opts.get("firstresult", False)) if caller.spec else False
        name = caller.name
        needed = {arg for impl in ready for arg in impl.argnames}
        # Without wrappers or firstresult, and while the manager runs pluggy's own loop (no
        # monitoring added), that loop only calls each shield in turn, last registered first:
        # done here without it (a hook called for every event, ``hermes_on_event``, pays it
        # once per streamed token).
        direct = (
            [(impl.function, impl.argnames) for impl in reversed(ready)]
            if _PLUGGY_LOOP is not None and not self.wrappers and not firstresult
            else None
        )

        def call(kwargs: dict[str, Any]) -> Any:
            if not needed.issubset(kwargs):
                # The plain way names what is missing (pluggy's HookCallError).
                subset = pm.subset_hook_caller(name, [impl.plugin for impl in plain])
                return subset.call_extra(shields, kwargs)
            if direct is not None and getattr(pm, "_inner_hookexec", None) is _PLUGGY_LOOP:
                results = []
                for function, names in direct:
                    value = function(*[kwargs[arg] for arg in names])
                    if value is not None:
                        results.append(value)
                return results
            return execute(name, list(ready), kwargs, firstresult)

        self.call = call


# pluggy's own loop over a call's implementations (what a manager without monitoring runs).
_PLUGGY_LOOP: Any = getattr(importlib.import_module("pluggy._callers"), "_multicall", None)

# A hook caller -> its prepared call. A process has one plugin manager and calls four hooks this
# way; the map is emptied when it grows past _PREPARED_MAX, so the callers (and plugin managers)
# of kernels made and dropped one after another (tests) are not kept for long.
_PREPARED: dict[pluggy.HookCaller, _Prepared] = {}
_PREPARED_MAX = 32


def _prepare(pm: pluggy.PluginManager, caller: pluggy.HookCaller, impls: list[pluggy.HookImpl]) -> _Prepared:
    """Return the prepared call of ``caller`` for its current implementations."""
    prepared = _PREPARED.get(caller)
    # List equality compares items by identity first (HookImpl has no __eq__): one C loop.
    if prepared is None or prepared.impls != impls:
        if len(_PREPARED) >= _PREPARED_MAX:
            _PREPARED.clear()
        prepared = _PREPARED[caller] = _Prepared(pm, caller, impls)
    return prepared


def _shield(impl: pluggy.HookImpl) -> Callable[..., Any]:
    """Wrap one implementation so that pluggy calls it like the original and it never raises;
    what it returned or raised goes to the running call's outcomes."""
    function = impl.function
    plugin = impl.plugin_name
    current = _OUTCOMES.get

    # functools.wraps sets __wrapped__, so pluggy reads the original's argument names.
    @functools.wraps(function)
    def shielded(*args: Any, **kwargs: Any) -> Any:
        try:
            value = function(*args, **kwargs)
        except Exception as exc:
            current().append(HookOutcome(plugin, error=exc))
            return None
        current().append(HookOutcome(plugin, value))
        return value

    shielded.hermes_plugin = plugin  # type: ignore[attr-defined]  # read by the tracer
    return shielded


def _merge(
    outcomes: list[HookOutcome], result: Any, wrappers: Sequence[pluggy.HookImpl]
) -> list[HookOutcome]:
    """Let a wrapper's change of the result win, keeping owners where the values are the same."""
    if not wrappers:
        return outcomes  # nothing could change the result: it is the outcomes' values
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
