"""What the kernel makes off the way to a host's first answer (docs/chat.md#budgets).

The question broker is made when it is first needed: a new session's snapshot lists its open
questions, and closing it closes them, without making one while none was asked. The approval
allowlist (``approvals.json``) is read :data:`ALLOWLIST_AFTER_S` after start, on first use if a
tool call comes sooner, and at the latest when the kernel stops, so an unreadable file is still
reported at start-up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core.approvals import Allowlist
    from hermes_core.events import CloseReason, QuestionRequested
    from hermes_core.questions import QuestionBroker

#: Seconds after start the allowlist is read: past a host's first request, which reading it (and
#: importing the approval policy) would otherwise delay.
ALLOWLIST_AFTER_S = 0.5


class LaterQuestions:
    """The kernel's question broker, made on first use.

    :param emit: where the broker sends its events (``kernel.sessions.emit``).
    """

    def __init__(self, emit: Callable[[str, Any], None]) -> None:
        self._emit = emit
        self._broker: QuestionBroker | None = None

    @property
    def broker(self) -> QuestionBroker:
        """The broker, made now if it was not."""
        if self._broker is None:
            from hermes_core.questions import QuestionBroker

            self._broker = QuestionBroker(self._emit)
        return self._broker

    def open_for(self, session_id: str) -> list[QuestionRequested]:
        """A session's open questions, oldest first (none while no broker was made)."""
        return [] if self._broker is None else self._broker.open_for(session_id)

    def close_where(self, predicate: Callable[[QuestionRequested], bool], reason: CloseReason) -> int:
        """Close the open questions ``predicate`` picks; return how many."""
        return 0 if self._broker is None else self._broker.close_where(predicate, reason)


class LaterAllowlist:
    """The approval allowlist of a running kernel, read soon after start.

    :param data_dir: the folder of ``approvals.json`` (in memory without one).
    """

    def __init__(self, data_dir: Path | None) -> None:
        self._data_dir = data_dir
        self._allowlist: Allowlist | None = None
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Read the file :data:`ALLOWLIST_AFTER_S` from now (call on the kernel's loop)."""
        self._timer = asyncio.get_running_loop().call_later(ALLOWLIST_AFTER_S, self.get)

    def get(self) -> Allowlist:
        """The allowlist, read now if it was not (an unreadable file is logged then)."""
        if self._allowlist is None:
            from hermes_core.approvals.allowlist import open_allowlist

            self._allowlist = open_allowlist(self._data_dir)
        return self._allowlist

    def stop(self) -> None:
        """The kernel stops: a kernel that ran less long still reports an unreadable file."""
        if self._timer is not None:
            self._timer.cancel()
        self.get()
