"""One lifecycle for approval, clarify, sudo and secret questions (docs/reference/core.md#questions).

The broker mints request ids, emits ``QuestionRequested``, waits for ``answer()`` or a deadline,
and ends every question exactly once with ``QuestionClosed``. The asking side always gets a
:class:`Closed` value; the empty answer is ``deny`` for approvals and ``""`` otherwise.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from hermes_core.events import CloseReason, QuestionClosed, QuestionRequested

REMEMBERED_CLOSED = 1024


@dataclass(frozen=True, slots=True)
class Closed:
    """How a question ended and the value the asking tool receives."""

    reason: CloseReason
    value: str

    @property
    def answered(self) -> bool:
        return self.reason == "answered"


@dataclass(slots=True)
class _Open:
    """An open question with its waiter and expiry timer."""

    request: QuestionRequested
    future: asyncio.Future[Closed]
    timer: asyncio.TimerHandle | None


def empty_answer(kind: str) -> str:
    """Return what a tool gets when nobody answers: deny for approvals, empty text otherwise."""
    return "deny" if kind == "approval" else ""


class QuestionBroker:
    """Tracks open questions of one kernel.

    :param emit: called on the loop with ``(session_id, event)`` for every request and close.
    """

    def __init__(self, emit: Callable[[str, Any], None]) -> None:
        self._emit = emit
        self._open: dict[str, _Open] = {}
        self._closed: OrderedDict[str, None] = OrderedDict()

    def _new_id(self) -> str:
        while True:
            rid = secrets.token_hex(6)
            if rid not in self._open and rid not in self._closed:
                return rid

    async def ask(self, request: QuestionRequested, *, answerable: bool = True) -> Closed:
        """Open a question and wait until it closes.

        ``request`` is a template: its ``request_id`` and deadline are filled here. When the
        kind is not answerable the question is closed at once with reason ``no_answerer``.
        """
        loop = asyncio.get_running_loop()
        rid = self._new_id()
        now = time.monotonic()
        request = replace(request, request_id=rid, deadline_monotonic=now + request.timeout_s)
        future: asyncio.Future[Closed] = loop.create_future()
        entry = _Open(request, future, None)
        self._open[rid] = entry
        self._emit(request.session_id, request)
        if not answerable:
            self._close(rid, "no_answerer", None)
        else:
            entry.timer = loop.call_later(request.timeout_s, self._close, rid, "timeout", None)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            self._close(rid, "interrupted", None)
            raise

    def answer(self, request_id: str, value: str) -> Literal["ok", "expired", "unknown"]:
        """Answer an open question; never raises."""
        if request_id in self._open:
            self._close(request_id, "answered", value)
            return "ok"
        if request_id in self._closed:
            return "expired"
        return "unknown"

    def get(self, request_id: str) -> QuestionRequested | None:
        """Return the open request with this id, if any."""
        entry = self._open.get(request_id)
        return entry.request if entry else None

    def open_for(self, session_id: str) -> list[QuestionRequested]:
        """Return the session's open questions, oldest first, in their original shape."""
        return [e.request for e in self._open.values() if e.request.session_id == session_id]

    def close_where(self, predicate: Callable[[QuestionRequested], bool], reason: CloseReason) -> int:
        """Close every open question matching ``predicate``; return how many."""
        ids = [rid for rid, e in self._open.items() if predicate(e.request)]
        for rid in ids:
            self._close(rid, reason, None)
        return len(ids)

    def _close(self, rid: str, reason: CloseReason, value: str | None) -> None:
        entry = self._open.pop(rid, None)
        if entry is None:
            return
        if entry.timer is not None:
            entry.timer.cancel()
        self._closed[rid] = None
        while len(self._closed) > REMEMBERED_CLOSED:
            self._closed.popitem(last=False)
        req = entry.request
        result = value if reason == "answered" and value is not None else empty_answer(req.kind)
        self._emit(
            req.session_id,
            QuestionClosed(
                session_id=req.session_id,
                turn_id=req.turn_id,
                request_id=rid,
                kind=req.kind,
                reason=reason,
                choice=result if req.kind == "approval" else None,
                call_id=req.call_id,
                task_id=req.task_id,
            ),
        )
        if not entry.future.done():
            entry.future.set_result(Closed(reason, result))
