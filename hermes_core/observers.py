"""Show every session event to the ``hermes_on_event`` plugins, isolating each one's failure.

An implementation may name the event types it wants with :func:`watches`. It is then called for
those only, and an event that no implementation wants costs no hook call at all: in the default
install the only observer is the mock provider's, which needs a handful of types, while an API
request emits a dozen events (and a stream one per batch of deltas).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from hermes_core.events import SessionProblem
from hermes_core.hook_calls import call_each

if TYPE_CHECKING:
    import pluggy

    from hermes_core.events import Event
    from hermes_core.session.live import Session

log = logging.getLogger("hermes.kernel")

F = TypeVar("F", bound=Callable[..., Any])

#: The attribute :func:`watches` sets on an implementation: the event types it wants.
WATCHES = "hermes_watches"


def watches(*types: type) -> Callable[[F], F]:
    """Declare the event types a ``hermes_on_event`` implementation wants (subclasses included).

    The implementation is called only for events of those types; without this it sees every
    event. Put it under or over ``@hookimpl``.

    :raises TypeError: no type given, or the function has no ``event`` parameter.
    """
    if not types or not all(isinstance(t, type) for t in types):
        raise TypeError("watches() takes one or more event classes")

    def mark(function: F) -> F:
        names = list(inspect.signature(function).parameters)
        if "event" not in names:
            raise TypeError(f"{function.__qualname__} has no 'event' parameter to filter on")
        at = names.index("event")

        @functools.wraps(function)  # keeps the argument names pluggy reads (__wrapped__)
        def watching(*args: Any, **kwargs: Any) -> Any:
            event = kwargs["event"] if "event" in kwargs else args[at]
            if isinstance(event, types):
                return function(*args, **kwargs)
            return None

        setattr(watching, WATCHES, types)
        return watching  # type: ignore[return-value]

    return mark


class _Wanted:
    """Which event types at least one implementation wants, for one set of implementations."""

    __slots__ = ("impls", "kinds", "some")

    def __init__(self, impls: list[pluggy.HookImpl]) -> None:
        self.impls = impls
        declared = [getattr(impl.function, WATCHES, None) for impl in impls]
        # None: an implementation (or a hook wrapper) that declared nothing wants everything.
        self.some: tuple[type, ...] | None = (
            None if any(d is None for d in declared) else tuple(t for d in declared for t in d or ())
        )
        self.kinds: dict[type, bool] = {}

    def __call__(self, kind: type) -> bool:
        if self.some is None:
            return True
        wanted = self.kinds.get(kind)
        if wanted is None:
            wanted = self.kinds[kind] = issubclass(kind, self.some)
        return wanted


# A hook caller -> what its implementations want; emptied past _WANTED_MAX entries (kernels made
# and dropped one after another in tests), as hook_calls does with its prepared calls.
_WANTED: dict[Any, _Wanted] = {}
_WANTED_MAX = 32


def _wanted(caller: pluggy.HookCaller) -> _Wanted:
    impls = caller.get_hookimpls()
    found = _WANTED.get(caller)
    # List equality compares items by identity first (HookImpl has no __eq__): one C loop.
    if found is None or found.impls != impls:
        if len(_WANTED) >= _WANTED_MAX:
            _WANTED.clear()
        found = _WANTED[caller] = _Wanted(impls)
    return found


def observe(pm: pluggy.PluginManager, session: Session, event: Event) -> None:
    """Call ``hermes_on_event`` for ``event``; a failing plugin is logged and reported once.

    The report is a ``SessionProblem`` on the session (never for a failure to observe a report).
    """
    if not _wanted(pm.hook.hermes_on_event)(type(event)):
        return
    for outcome in call_each(pm, "hermes_on_event", session=session, event=event):
        if outcome.error is not None:
            log.warning("event observer %s failed", outcome.plugin, exc_info=outcome.error)
            if not isinstance(event, SessionProblem):
                text = f"plugin {outcome.plugin!r} failed while observing events: {outcome.error}"
                session.report_problem("plugin", text, once=f"plugin:{outcome.plugin}")
