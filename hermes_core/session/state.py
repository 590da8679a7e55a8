"""The stored part of a live session: its record, its active rows, its usage total and whether
storage holds it yet (docs/reference/core.md#sessions-and-storage).

:class:`SessionState` owns these fields; every other part of a session (and the turn machinery,
through :class:`~hermes_core.session.Session`) changes them through its methods. New sessions
write nothing until their first row: :meth:`SessionState.append_rows` creates the stored session
then.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes_core.events import Usage
from hermes_core.evolve import evolve
from hermes_core.history import materialize
from hermes_core.outlive import outlive
from hermes_core.storage import NewRow, Row, SessionRecord

if TYPE_CHECKING:
    from hermes_core.session.new_lease import NewLease
    from hermes_core.storage import Storage

__all__ = ["SessionState"]


class SessionState:
    """A session's record, active rows, usage and pending title, and writing them to storage."""

    def __init__(
        self,
        storage: Storage,
        record: SessionRecord,
        rows: list[Row],
        persisted: bool,
        *,
        memory_only: bool = False,
    ) -> None:
        """:param memory_only: keep rows and record in memory and write nothing (a background
        task's private session); its rows get negative ids, never confused with stored ones."""
        self._storage = storage
        self._memory_only = memory_only
        self._last_memory_id = 0
        self._record = record
        self._rows = rows
        self._persisted = persisted
        # Done when the first write (the one that creates the stored session) ends, while it runs.
        self._creating: asyncio.Future[None] | None = None
        self._pending_title: str | None = None
        # A new session's writer lease, taken by its first write (see :meth:`expect_lease`).
        self._lease: NewLease | None = None
        self._usage = Usage(
            **{k: v for k, v in dict(record.usage).items() if k in Usage.__dataclass_fields__}
        )
        # The usage total the stored record holds (a new session's is written with it).
        self._stored_usage = self._usage

    @property
    def record(self) -> SessionRecord:
        return self._record

    @property
    def rows(self) -> list[Row]:
        """The active rows, in order (read-only view for the loop and session ops)."""
        return self._rows

    @property
    def persisted(self) -> bool:
        """Whether storage holds the session yet (new sessions are written at their first row)."""
        return self._persisted

    def expect_lease(self, lease: NewLease) -> None:
        """Take the writer lease with (or before) the first write, through ``lease``.

        A session whose id was made for its open is handed out before its lease is taken, so its
        first turn's model call need not wait for it; its first write takes it (or waits for it),
        and fails with what taking it raised.
        """
        self._lease = lease

    async def lease_held(self) -> None:
        """Return once a lease being taken is ours, raising what taking it raised; at once when
        nobody asked for it yet (a new session that wrote nothing)."""
        if self._lease is not None:
            await self._lease.settled()

    async def take_lease_now(self) -> None:
        """Return once the writer lease is ours, taking it now if a new session has not yet
        (before its id is revealed); raise what taking it raised."""
        if self._lease is not None:
            await self._lease.held()

    @property
    def lease_started(self) -> bool:
        """Whether this session holds (or is taking, or tried to take) its writer lease."""
        return self._lease is None or self._lease.started

    @property
    def lease_pending(self) -> bool:
        """Whether the writer lease is not ours yet (a new session's, before its first write)."""
        return self._lease is not None and self._lease.pending

    @property
    def lease_failed(self) -> bool:
        """Whether taking the writer lease failed (the session must write nothing)."""
        return self._lease is not None and self._lease.failed

    @property
    def pending_title(self) -> str | None:
        """A title chosen before the session was stored; written with its first row."""
        return self._pending_title

    @property
    def usage(self) -> Usage:
        return self._usage

    async def append_rows(self, rows: Sequence[NewRow], *, with_usage: bool = False) -> list[Row]:
        """Append rows (creating the session on the first write) and cache them; cancel-safe:
        a cancelled caller waits for the write to end, then gets its ``CancelledError``.

        :param with_usage: store the session's usage total in the same write (a turn's reply:
            one transaction instead of the row's and then the total's, see :meth:`save_usage`).
        """
        return await outlive(self.start_append(rows, with_usage=with_usage))

    def start_append(self, rows: Sequence[NewRow], *, with_usage: bool = False) -> asyncio.Future[list[Row]]:
        """Start :meth:`append_rows` as a task of its own and return it: it runs from the next
        loop pass, after what was scheduled before it (await it with ``outlive``)."""
        return asyncio.ensure_future(self._persist_now(list(rows), with_usage))

    async def save_usage(self) -> None:
        """Store the session's usage total, unless the stored record already holds it."""
        if self._usage != self._stored_usage:
            await self.update_record(usage=_usage_dict(self._usage))

    async def _persist_now(self, rows: list[NewRow], with_usage: bool = False) -> list[Row]:
        if self._memory_only:
            if with_usage:
                self._record = evolve(self._record, usage=_usage_dict(self._usage))
            return self._keep_in_memory(rows)
        if not self._persisted and self._creating is not None:
            await self._created()  # then append to what it stored, or create it if it failed
        lease = self._lease
        # One timestamp for memory and storage, so a row reads the same after a restart.
        now = time.time()
        rows = [r if r.created_at is not None else evolve(r, created_at=now) for r in rows]
        if not self._persisted:
            creating = self._creating = asyncio.get_running_loop().create_future()
            try:
                ids = await self._create(rows, lease)
            finally:
                self._creating = None
                creating.set_result(None)
        else:
            fields: dict[str, Any] = {}
            if with_usage:
                fields["usage"] = _usage_dict(self._usage)
            if self._pending_title and not self._record.title:
                # Stored before its first turn (e.g. by /model): the derived title lands now.
                fields["title"] = self._pending_title
                fields["title_origin"] = self._record.title_origin or "derived"
            ids = await self._append(rows, fields)
        made = [materialize(self._record.id, new, rid) for new, rid in zip(rows, ids, strict=True)]
        self._rows.extend(made)
        return made

    async def _create(self, rows: list[NewRow], lease: NewLease | None) -> list[int]:
        """Store the session with its first rows (the first write); return the rows' ids."""
        record = evolve(
            self._record, title=self._record.title or self._pending_title, usage=_usage_dict(self._usage)
        )
        if self._pending_title and not self._record.title:
            record = evolve(record, title_origin=self._record.title_origin or "explicit")
        usage = self._usage
        if lease is not None:
            ids: list[int] = await lease.create(record, rows)  # takes the lease too, or waits for it
        else:
            ids = await self._storage.create_session(record, rows)
        self._record = record
        self._stored_usage = usage
        self._pending_title = None
        self._persisted = True
        return ids

    async def _created(self) -> None:
        """Wait while another call's first write is under way (its failure is that call's)."""
        while not self._persisted and self._creating is not None:
            await asyncio.wait((self._creating,))

    async def _append(self, rows: list[NewRow], fields: dict[str, Any]) -> list[int]:
        """Store rows of the stored session, and ``fields`` with them: in one write where the
        storage offers it (``hermes_core.storage.AppendUpdates``), else the rows then the fields."""
        storage = self._storage
        session_id = self._record.id
        if not fields:
            return await storage.append_rows(session_id, rows)
        usage = self._usage
        together = getattr(storage, "append_rows_and_update", None)
        if together is not None:
            ids: list[int] = await together(session_id, rows, fields)
            self._record = evolve(self._record, **fields)
        else:
            ids = await storage.append_rows(session_id, rows)
            await self.update_record(**fields)
        if "usage" in fields:
            self._stored_usage = usage
        if "title" in fields:
            self._pending_title = None
        return ids

    def _keep_in_memory(self, rows: list[NewRow]) -> list[Row]:
        made = []
        for new in rows:
            self._last_memory_id -= 1
            made.append(materialize(self._record.id, new, self._last_memory_id))
        self._rows.extend(made)
        return made

    async def update_record(self, **fields: Any) -> None:
        """Change session columns in memory and (once persisted) in storage."""
        if not self._persisted and self._creating is not None:
            # The first write stores the record as it was when it began: a change made meanwhile
            # would be lost in memory and in storage, so it waits and is stored after it.
            await self._created()
        usage = self._usage
        self._record = evolve(self._record, **fields)
        if self._persisted and not self._memory_only:
            await self._storage.update_session(self._record.id, fields)
        if "usage" in fields and fields["usage"] == _usage_dict(usage):
            self._stored_usage = usage

    def replace_rows(self, rows: list[Row]) -> None:
        """Make ``rows`` the active rows in memory (after rewind, compress or reconcile)."""
        self._rows = rows

    def add_usage(self, usage: Usage) -> Usage:
        """Add one model call's usage to the session's total and return the new total."""
        self._usage = self._usage.plus(usage)
        return self._usage

    def set_pending_title(self, title: str, origin: str) -> None:
        """Keep ``title`` (from ``origin``: explicit, derived) until the session is stored."""
        self._pending_title = title
        self._record = evolve(self._record, title_origin=origin)


def _usage_dict(usage: Usage) -> dict[str, Any]:
    # Every field is a scalar, so this equals dataclasses.asdict at a fraction of its cost.
    return {name: getattr(usage, name) for name in _USAGE_FIELDS}


_USAGE_FIELDS = tuple(Usage.__dataclass_fields__)
