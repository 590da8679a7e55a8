"""A live session's transcript as hosts work with it: the projected history, rewind and undo,
reconcile, compress, branch and background tasks (docs/reference/core.md#rewind-and-reconcile,
#branch-compress-titles-model-switch, #background-tasks-and-one-shot-calls).

:class:`SessionTranscript` is a part of :class:`~hermes_core.session.Session`; the operations
themselves are in :mod:`hermes_core.session.ops`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_core.backref import BackRef
from hermes_core.errors import InvalidValue, RewindError, SessionBusy
from hermes_core.history import is_user_turn, project
from hermes_core.session import ops as session_ops
from hermes_core.session.compare import comparable_rows
from hermes_core.session.types import CompressResult, ReconcileResult, RewindResult
from hermes_core.storage import Row

if TYPE_CHECKING:
    from hermes_core.budgets import ChargeTo
    from hermes_core.content import SeedMessage
    from hermes_core.session.live import Session
    from hermes_core.session.state import SessionState


class SessionTranscript:
    """The part of a session that reads and reshapes its transcript (it owns no field: the rows
    are :class:`SessionState`'s)."""

    #: The owning session, held weakly (it holds this part).
    _session: BackRef[Session] = BackRef()

    def __init__(self, session: Session, state: SessionState) -> None:
        self._session = session
        self._state = state

    async def history(self, *, include_archived: bool = False, replay: bool = False) -> list[Row]:
        """Return the projection hosts see (docs/reference/core.md#messages-and-the-projection)."""
        if include_archived and self._state.persisted:
            rows = await self._session.kernel.storage.load_rows(self._session.id, include_archived=True)
            return [r for r in rows if not r.active or r in project([r], replay=replay)]
        return project(self._state.rows, replay=replay)

    async def rewind(self, *, before_row_id: int, allow_empty: bool) -> RewindResult:
        """Soft-archive the rows from ``before_row_id`` on; see :func:`session_ops.rewind`."""
        return await session_ops.rewind(self._session, before_row_id=before_row_id, allow_empty=allow_empty)

    async def mark_cut_off(self, row_id: int, reason: str = "interrupted") -> None:
        """Mark an assistant reply of this session cut off (``meta["cut_off"]``, see
        ``history.cut_off_reason``): the host told its client the turn did not complete (an API
        run ended elsewhere while this process finished it), so the transcript must not count
        the reply as a complete one. The model is told it was cut off, like any cut-off reply.

        :raises InvalidValue: ``row_id`` is not an active assistant row of this session, or
            ``reason`` is not a cut-off reason.
        """
        from hermes_core.history import CUT_OFF_NOTES

        if reason not in CUT_OFF_NOTES:
            raise InvalidValue("reason", tuple(CUT_OFF_NOTES))
        row = next((r for r in self._state.rows if r.id == row_id and r.role == "assistant"), None)
        if row is None:
            raise InvalidValue(
                "row_id", message=f"row {row_id} is not an active assistant row of this session"
            )
        if row.meta.get("cut_off"):
            return  # cut off already (the turn saved it so)
        meta = {"cut_off": reason}
        if self._state.persisted:
            await self._session.kernel.storage.update_row_meta(row_id, meta)
        marked = dataclasses.replace(row, meta={**row.meta, **meta})
        self._state.replace_rows([marked if r.id == row_id else r for r in self._state.rows])

    async def mark_no_reply(self, row_id: int, reason: str = "interrupted") -> None:
        """Mark a user row whose turn ended before any reply was stored (``meta["no_reply"]``,
        see ``history.no_reply_note``), so a host redrawing the transcript from rows says so.

        :raises InvalidValue: ``row_id`` is not an active user row of this session, or
            ``reason`` is not a no-reply reason.
        """
        from hermes_core.history import NO_REPLY_NOTES

        if reason not in NO_REPLY_NOTES:
            raise InvalidValue("reason", tuple(NO_REPLY_NOTES))
        row = next((r for r in self._state.rows if r.id == row_id and r.role == "user"), None)
        if row is None:
            raise InvalidValue("row_id", message=f"row {row_id} is not an active user row of this session")
        meta = {"no_reply": reason}
        if self._state.persisted:
            await self._session.kernel.storage.update_row_meta(row_id, meta)
        marked = dataclasses.replace(row, meta={**row.meta, **meta})
        self._state.replace_rows([marked if r.id == row_id else r for r in self._state.rows])

    async def undo(self) -> RewindResult:
        """Soft-archive the last user turn and everything after it (``/undo``, ``/retry``;
        docs/reference/core.md#rewind-and-reconcile).

        The typed command is the consent, so emptying the transcript is allowed.

        :returns: the ``RewindResult``, with ``survivor_user_row_ids``.
        :raises SessionBusy: while a turn runs or prompts wait.
        :raises RewindError: code 4018 when there is no user turn to undo.
        """
        if self._session.busy:
            raise SessionBusy("busy", "cannot undo while a turn is running; interrupt first")
        last = next((r for r in reversed(self._state.rows) if is_user_turn(r)), None)
        if last is None:
            raise RewindError(4018, "there is no user turn to undo", {"user_turn_count": 0})
        return await self.rewind(before_row_id=last.id, allow_empty=True)

    def comparable_transcript(self) -> list[tuple[str, str]]:
        """Return the active rows as reconcile compares them with a client's transcript:
        ``(role, normalized text)`` (see :func:`hermes_core.comparable_messages`)."""
        return [(role, text) for role, text, _ in comparable_rows(self._state.rows)]

    async def reconcile(self, messages: Sequence[SeedMessage]) -> ReconcileResult:
        """Make the transcript match a client's ``messages``; see :func:`session_ops.reconcile`."""
        return await session_ops.reconcile(self._session, messages)

    async def compress(
        self, *, focus_topic: str | None = None, charge: ChargeTo | None = None
    ) -> CompressResult:
        """Summarise older turns into one row; see :func:`session_ops.compress`.

        :param charge: who pays for the summary call (None: who the session's turns pay).
        :raises BudgetExceeded: the summary call does not fit in a bucket; nothing changed.
        """
        return await session_ops.compress(self._session, focus_topic=focus_topic, charge=charge)

    async def branch(
        self,
        *,
        owner: str,
        count: int | None = None,
        up_to_row_id: int | None = None,
        title: str | None = None,
        cwd: Path | None = None,
    ) -> Session:
        return await session_ops.branch(
            self._session, owner=owner, count=count, up_to_row_id=up_to_row_id, title=title, cwd=cwd
        )

    def background(
        self,
        text: str,
        *,
        answerable: frozenset[str] | set[str] = frozenset(),
        charge: ChargeTo | None = None,
    ) -> str:
        """Run a separate one-shot agent on this session's model, cwd and profile
        (docs/reference/core.md#background-tasks-and-one-shot-calls).

        :param answerable: the question kinds the host answers for the task, as for
            :meth:`submit`; by default none, so a question is denied at once instead of waiting.
        :param charge: who the task's turn charges, as for :meth:`submit`.
        """
        return self._session.kernel.sessions.start_background(
            self._session, text, answerable=frozenset(answerable), charge=charge
        )
