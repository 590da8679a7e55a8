"""Show every session event to the ``hermes_on_event`` plugins, isolating each one's failure."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from hermes_core.events import SessionProblem
from hermes_core.hook_calls import call_each

if TYPE_CHECKING:
    import pluggy

    from hermes_core.events import Event
    from hermes_core.session.live import Session

log = logging.getLogger("hermes.kernel")


def observe(pm: pluggy.PluginManager, session: Session, event: Event) -> None:
    """Call ``hermes_on_event`` for ``event``; a failing plugin is logged and reported once.

    The report is a ``SessionProblem`` on the session (never for a failure to observe a report).
    """
    for outcome in call_each(pm, "hermes_on_event", session=session, event=event):
        if outcome.error is not None:
            log.warning("event observer %s failed", outcome.plugin, exc_info=outcome.error)
            if not isinstance(event, SessionProblem):
                text = f"plugin {outcome.plugin!r} failed while observing events: {outcome.error}"
                session.report_problem("plugin", text, once=f"plugin:{outcome.plugin}")
