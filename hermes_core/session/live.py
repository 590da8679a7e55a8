"""A live session: its state, persistence, the event bus and closing
(docs/reference/core.md#core-api, #the-turn-loop).

Submitting, the busy queue, steer and interrupt are in :mod:`hermes_core.session.submitting`; what a
host sets (model, cwd, profile, title…) in :mod:`hermes_core.session.controls`; the transcript
(history, rewind, compress, branch…) in :mod:`hermes_core.session.transcript`. The turn loop
itself lives in :mod:`hermes_core.turn`; history operations (rewind, compress, branch, reconcile)
in :mod:`hermes_core.session.ops`.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import time
from collections.abc import Iterable, MutableMapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.events import (
    Event,
    SessionChanged,
    Usage,
)
from hermes_core.history import materialize
from hermes_core.observers import observe
from hermes_core.refs import ModelRef
from hermes_core.session.controls import PROFILES, SessionControls
from hermes_core.session.queue import _DONE, QueueItem, Subscription
from hermes_core.session.submitting import SessionQueue
from hermes_core.session.transcript import SessionTranscript
from hermes_core.session.types import (
    SessionInfo,
    Status,
)
from hermes_core.storage import NewRow, Row, SessionRecord

if TYPE_CHECKING:
    from hermes_core.event_log.writer import SessionLog
    from hermes_core.kernel import Kernel
    from hermes_core.subagents import Lineage
    from hermes_core.tools import FileAccess
    from hermes_core.turn import TurnRun

log = logging.getLogger("hermes.session")
__all__ = ["PROFILES", "Session"]


class Session(SessionQueue, SessionControls, SessionTranscript):
    """A live session; create it with ``Kernel.open_session`` (never directly)."""

    #: Set on a delegated child by ``kernel.sessions.children`` (docs/reference/core.md#subagents).
    lineage: Lineage | None = None

    def __init__(self, kernel: Kernel, record: SessionRecord, rows: list[Row], persisted: bool) -> None:
        self.kernel = kernel
        self.id = record.id
        self._record = record
        self._cwd_text: str | None = None
        self._cwd = Path()
        self._rows: list[Row] = rows
        self._persisted = persisted
        self._queue: collections.deque[QueueItem] = collections.deque()
        self._queued_chars = 0
        self._subscribers: list[asyncio.Queue[Any]] = []
        self._runner: asyncio.Task[None] | None = None
        self.run: TurnRun | None = None
        self.status: Status = "idle"
        #: A model chosen with ``/model --once``: used by the next turn, then cleared.
        self.once_model: str | None = None
        self._usage = Usage(
            **{k: v for k, v in dict(record.usage).items() if k in Usage.__dataclass_fields__}
        )
        self._hidden_tools: frozenset[str] = frozenset()
        self._session_memory: set[str] = set()
        #: Background tasks of this session by id (see ``background.py``).
        self.background_tasks: dict[str, asyncio.Task[Any]] = {}
        #: Whether the title refinement ran (or must never run, for a background task).
        self.title_refine_started = False
        self._processes: list[Any] = []
        self._pending_title: str | None = None
        self._closed = False
        self._created_at = record.created_at
        self.extra: MutableMapping[str, str] = _ExtraMap(self, dict(record.extra))
        self.file_access: FileAccess = kernel.default_file_access()
        self._problems_reported: set[str] = set()
        # The session's event log, attached by kernel.events when the session table opens it.
        self._log: SessionLog | None = None

    # -- state -------------------------------------------------------------------------------
    @property
    def record(self) -> SessionRecord:
        return self._record

    @property
    def rows(self) -> list[Row]:
        """The active rows, in order (read-only view for the loop and session ops)."""
        return self._rows

    @property
    def busy(self) -> bool:
        return self._runner is not None or bool(self._queue)

    @property
    def cwd(self) -> Path:
        text = self._record.cwd
        if text is not self._cwd_text:  # made once per folder, not per look (several per turn)
            self._cwd, self._cwd_text = Path(text), text
        return self._cwd

    @property
    def profile(self) -> str:
        return self._record.profile

    @property
    def usage(self) -> Usage:
        return self._usage

    def info(self) -> SessionInfo:
        """Return a snapshot of the session's state."""
        ref, source = self.kernel.models.for_session(self)
        provider = ModelRef.split(ref).provider
        return SessionInfo(
            session_id=self.id,
            source=self._record.source,
            model=ref,
            provider=provider,
            model_source=source,
            cwd=self._record.cwd,
            profile=self._record.profile,
            title=self._record.title or self._pending_title,
            status=self.status,
            busy=self.busy,
            running=self.run is not None,
            queued=len(self._queue),
            usage=self._usage,
            reasoning_effort=self._record.reasoning_effort,
            parent_session_id=self._record.parent_session_id,
            channel_key=self._record.channel_key,
            persisted=self._persisted,
            created_at=self._created_at,
            extra=dict(self.extra),
        )

    # -- the internal API of the turn machinery ------------------------------------------------
    # turn.py, tool_round.py, model_call.py, tool_context.py, session_ops.py, titles.py and
    # background.py change a session only through these methods.

    def set_status(self, status: Status) -> None:
        """Set the session's status and emit ``SessionChanged(status)`` when it changed."""
        if status != self.status:
            self.status = status
            self.emit(
                SessionChanged(
                    session_id=self.id, turn_id=self.run.turn_id if self.run else None, fields=("status",)
                )
            )

    def mark_changed(self, *fields: str) -> None:
        """Emit ``SessionChanged`` naming ``fields`` (e.g. ``history`` after a rewind)."""
        self.emit(SessionChanged(session_id=self.id, fields=tuple(fields)))

    # -- events ------------------------------------------------------------------------------
    def subscribe(self) -> Subscription:
        """Return an iterator over every later event of this session, in or out of turns."""
        return Subscription(self)

    def attach_log(self, log: SessionLog) -> None:
        """Number and log every later event in ``log`` (``kernel.events`` calls this at open)."""
        self._log = log

    def emit(self, event: Event) -> None:
        """Log an event (setting its ``seq``), then deliver it to subscribers, the running
        turn's listeners and the observers."""
        if self._log is not None:
            self._log.append(event)
        for q in self._subscribers:
            q.put_nowait(event)
        run = self.run
        if run is not None and event.turn_id == run.turn_id:
            for item in run.items:
                for q in item.listeners:
                    q.put_nowait(event)
        observe(self.kernel.pm, self, event)

    def report_problem(self, code: str, message: str, *, once: str | None = None) -> None:
        """Emit ``SessionProblem`` for a failure outside a turn (the text is redacted here).

        :param code: where it failed (``storage``, ``lease_lost``, ``plugin``, …).
        :param message: what failed, for a person.
        :param once: a key; a second report with the same key is dropped (a hook that fails on
            every event must not flood the host).
        """
        from hermes_core.events import SessionProblem

        if once is not None:
            if once in self._problems_reported:
                return
            self._problems_reported.add(once)
        text = self.kernel.redactor(message)[:500]
        self.emit(SessionProblem(session_id=self.id, turn_id=None, code=code, message=text))

    def forget_problem(self, once: str) -> None:
        """Let the next problem reported with key ``once`` through again (the outage ended)."""
        self._problems_reported.discard(once)

    def save_extra_later(self, extra: dict[str, str]) -> None:
        """Write the transport settings ``extra`` to storage in the background."""

        async def write() -> None:
            try:
                await self.update_record(extra=extra)
            except Exception as exc:
                log.warning("saving the settings of %s failed", self.id, exc_info=True)
                self.report_problem("storage", f"saving this session's settings failed: {exc}")

        if self.kernel.is_running:
            self.kernel.spawn(write())

    # -- persistence -------------------------------------------------------------------------
    async def append_rows(self, rows: Sequence[NewRow]) -> list[Row]:
        """Append rows (creating the session on the first write) and cache them; cancel-safe."""
        task = asyncio.ensure_future(self._persist_now(list(rows)))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            await task
            raise

    async def _persist_now(self, rows: list[NewRow]) -> list[Row]:
        storage = self.kernel.storage
        # One timestamp for memory and storage, so a row reads the same after a restart.
        now = time.time()
        rows = [r if r.created_at is not None else dataclasses.replace(r, created_at=now) for r in rows]
        if not self._persisted:
            record = dataclasses.replace(
                self._record, title=self._record.title or self._pending_title, usage=_usage_dict(self._usage)
            )
            if self._pending_title and not self._record.title:
                record = dataclasses.replace(record, title_origin=self._record.title_origin or "explicit")
            ids = await storage.create_session(record, rows)
            self._record = record
            self._pending_title = None
            self._persisted = True
        else:
            ids = await storage.append_rows(self.id, rows)
            if self._pending_title and not self._record.title:
                # Stored before its first turn (e.g. by /model): the derived title lands now.
                await self.update_record(
                    title=self._pending_title, title_origin=self._record.title_origin or "derived"
                )
                self._pending_title = None
        made = [materialize(self.id, new, rid) for new, rid in zip(rows, ids, strict=True)]
        self._rows.extend(made)
        return made

    async def update_record(self, **fields: Any) -> None:
        """Change session columns in memory and (once persisted) in storage."""
        self._record = dataclasses.replace(self._record, **fields)
        if self._persisted:
            await self.kernel.storage.update_session(self.id, fields)

    def replace_rows(self, rows: list[Row]) -> None:
        """Make ``rows`` the active rows in memory (after rewind, compress or reconcile)."""
        self._rows = rows

    @property
    def persisted(self) -> bool:
        """Whether storage holds the session yet (new sessions are written at their first row)."""
        return self._persisted

    def add_usage(self, usage: Usage) -> Usage:
        """Add one model call's usage to the session's total and return the new total."""
        self._usage = self._usage.plus(usage)
        return self._usage

    @property
    def approved_keys(self) -> AbstractSet[str]:
        """Approval keys remembered for this session (``session`` or ``always`` answers)."""
        return self._session_memory

    def remember_approval(self, keys: Iterable[str]) -> None:
        """Remember approval ``keys`` for the rest of this session."""
        self._session_memory.update(keys)

    def track_process(self, proc: Any) -> None:
        """Note a process a tool started, so interrupt and close can kill its group."""
        self._processes.append(proc)

    def untrack_process(self, proc: Any) -> None:
        """Forget a process that ended."""
        if proc in self._processes:
            self._processes.remove(proc)

    @property
    def pending_title(self) -> str | None:
        """A title chosen before the session was stored; written with its first row."""
        return self._pending_title

    def set_pending_title(self, title: str, origin: str) -> None:
        """Keep ``title`` (from ``origin``: explicit, derived) until the session is stored."""
        self._pending_title = title
        self._record = dataclasses.replace(self._record, title_origin=origin)

    def add_subscriber(self, queue: asyncio.Queue[Any]) -> None:
        """Deliver every later event of this session to ``queue`` too."""
        self._subscribers.append(queue)

    def remove_subscriber(self, queue: asyncio.Queue[Any]) -> None:
        """Stop delivering events to ``queue``."""
        if queue in self._subscribers:
            self._subscribers.remove(queue)

    # -- closing -----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            from hermes_core.errors import SessionNotFound

            raise SessionNotFound(self.id)

    async def close(self, *, reason: Literal["closed", "shutdown"] = "closed") -> None:
        """Interrupt, discard the queue, close questions, stop background work, release the lease."""
        if self._closed:
            return
        await self.interrupt(reason="system", discard_queue=True)
        self._closed = True
        runner = self._runner
        if runner is not None:
            try:
                await asyncio.wait_for(asyncio.shield(runner), 5)
            except (TimeoutError, asyncio.CancelledError, Exception):
                pass
        background = list(self.background_tasks.values())
        for task in background:
            task.cancel()
        self.kernel.questions.close_where(lambda q: q.session_id == self.id, reason)
        # Let each task report BackgroundCompleted(interrupted) before the bus ends.
        await asyncio.gather(*background, return_exceptions=True)
        from hermes_core.core_tools import kill_groups

        kill_groups(self.kernel.executor, self._processes)
        await self.kernel.tool_sources.session_closed(self.id)
        self.kernel.registry.forget_session_tools(self.id)
        for q in self._subscribers:
            q.put_nowait(_DONE)
        await self.kernel.sessions.forget(self)


def _usage_dict(usage: Usage) -> dict[str, Any]:
    # Every field is a scalar, so this equals dataclasses.asdict at a fraction of its cost.
    return {name: getattr(usage, name) for name in _USAGE_FIELDS}


_USAGE_FIELDS = tuple(Usage.__dataclass_fields__)


class _ExtraMap(MutableMapping[str, str]):
    """Per-session transport settings, written through to storage."""

    def __init__(self, session: Session, data: dict[str, str]) -> None:
        self._session = session
        self._data = data

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __setitem__(self, key: str, value: str) -> None:
        self._data[key] = str(value)
        self._session.save_extra_later(dict(self._data))

    def __delitem__(self, key: str) -> None:
        del self._data[key]
        self._session.save_extra_later(dict(self._data))

    def __iter__(self) -> Any:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)
