"""A live session: the parts it is made of, its event bus and closing
(docs/reference/core.md#core-api, #the-turn-loop).

A session is made of parts that own their fields: :class:`SessionState` (the record, rows, usage;
:mod:`hermes_core.session.state`), :class:`SessionQueue` (submitting, the busy queue, steer and
interrupt; :mod:`hermes_core.session.submitting`), :class:`SessionControls` (what a host sets:
model, cwd, profile, title…; :mod:`hermes_core.session.controls`) and :class:`SessionTranscript`
(history, rewind, compress, branch…; :mod:`hermes_core.session.transcript`). ``Session`` keeps
the event bus and closing, and offers the parts' methods as its own (``forward``). The turn loop
itself lives in :mod:`hermes_core.turn`; history operations in :mod:`hermes_core.session.ops`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, MutableMapping
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.backref import BackRef
from hermes_core.events import AnyEvent, SessionChanged, Usage
from hermes_core.observers import observe
from hermes_core.refs import ModelRef
from hermes_core.session.controls import PROFILES, SessionControls
from hermes_core.session.forward import forward
from hermes_core.session.queue import _DONE, Subscription
from hermes_core.session.state import SessionState
from hermes_core.session.submitting import SessionQueue
from hermes_core.session.transcript import SessionTranscript
from hermes_core.session.types import SessionInfo, Status
from hermes_core.storage import Row, SessionRecord

if TYPE_CHECKING:
    from hermes_core.event_log.writer import SessionLog
    from hermes_core.kernel import Kernel
    from hermes_core.session.folders import LazyFolder
    from hermes_core.subagent import Lineage
    from hermes_core.tools import FileAccess
    from hermes_core.turn import TurnRun

log = logging.getLogger("hermes.session")
__all__ = ["PROFILES", "Session"]


class Session:
    """A live session; create it with ``Kernel.open_session`` (never directly)."""

    #: Set on a delegated child by ``kernel.sessions.children`` (docs/reference/core.md#subagents).
    lineage: Lineage | None = None

    def __init__(
        self,
        kernel: Kernel,
        record: SessionRecord,
        rows: list[Row],
        persisted: bool,
        *,
        memory_only: bool = False,
    ) -> None:
        self.kernel = kernel
        self.id = record.id
        #: The parts (each owns its fields; see the module docstring).
        self.state = SessionState(kernel.storage, record, rows, persisted, memory_only=memory_only)
        self._cwd_text: str | None = None
        self._cwd = Path()
        self.queue = SessionQueue(self)
        self.controls = SessionControls(self, self.state)
        self.transcript = SessionTranscript(self, self.state)
        self._subscribers: list[asyncio.Queue[Any]] = []
        self.status: Status = "idle"
        #: A model chosen with ``/model --once``: used by the next turn, then cleared.
        self.once_model: str | None = None
        self._session_memory: set[str] = set()
        #: Background tasks of this session by id (see ``background.py``).
        self.background_tasks: dict[str, asyncio.Task[Any]] = {}
        #: Whether the title refinement ran (or must never run, for a background task).
        self.title_refine_started = False
        self._closed = False
        self.extra: MutableMapping[str, str] = _ExtraMap(self, dict(record.extra))
        self.file_access: FileAccess = kernel.default_file_access()
        self._problems_reported: set[str] = set()
        # The session's event log, attached by kernel.events when the session table opens it.
        self._log: SessionLog | None = None
        # A new session's folder, made when a tool first needs it (see defer_folder).
        self._folder: LazyFolder | None = None

    # -- the parts' methods, offered on the session ------------------------------------------
    submit = forward("queue", SessionQueue.submit)
    position_of = forward("queue", SessionQueue.position_of)
    cancel_queued = forward("queue", SessionQueue.cancel_queued)
    steer = forward("queue", SessionQueue.steer)
    withdraw_steer = forward("queue", SessionQueue.withdraw_steer)
    interrupt = forward("queue", SessionQueue.interrupt)
    open_questions = forward("queue", SessionQueue.open_questions)

    switch_model = forward("controls", SessionControls.switch_model)
    set_cwd = forward("controls", SessionControls.set_cwd)
    set_profile = forward("controls", SessionControls.set_profile)
    set_title = forward("controls", SessionControls.set_title)
    set_reasoning_effort = forward("controls", SessionControls.set_reasoning_effort)
    set_system_overlay = forward("controls", SessionControls.set_system_overlay)
    stop_processes = forward("controls", SessionControls.stop_processes)
    set_tool_filter = forward("controls", SessionControls.set_tool_filter)
    track_process = forward("controls", SessionControls.track_process)
    untrack_process = forward("controls", SessionControls.untrack_process)

    history = forward("transcript", SessionTranscript.history)
    rewind = forward("transcript", SessionTranscript.rewind)
    mark_cut_off = forward("transcript", SessionTranscript.mark_cut_off)
    mark_no_reply = forward("transcript", SessionTranscript.mark_no_reply)
    undo = forward("transcript", SessionTranscript.undo)
    comparable_transcript = forward("transcript", SessionTranscript.comparable_transcript)
    reconcile = forward("transcript", SessionTranscript.reconcile)
    compress = forward("transcript", SessionTranscript.compress)
    branch = forward("transcript", SessionTranscript.branch)
    background = forward("transcript", SessionTranscript.background)

    append_rows = forward("state", SessionState.append_rows)
    start_append = forward("state", SessionState.start_append)
    update_record = forward("state", SessionState.update_record)
    save_usage = forward("state", SessionState.save_usage)
    replace_rows = forward("state", SessionState.replace_rows)
    add_usage = forward("state", SessionState.add_usage)
    set_pending_title = forward("state", SessionState.set_pending_title)
    lease_held = forward("state", SessionState.lease_held)
    take_lease_now = forward("state", SessionState.take_lease_now)

    # -- state -------------------------------------------------------------------------------
    @property
    def record(self) -> SessionRecord:
        return self.state.record

    @property
    def rows(self) -> list[Row]:
        """The active rows, in order (read-only view for the loop and session ops)."""
        return self.state.rows

    @property
    def persisted(self) -> bool:
        """Whether storage holds the session yet (new sessions are written at their first row)."""
        return self.state.persisted

    @property
    def pending_title(self) -> str | None:
        """A title chosen before the session was stored; written with its first row."""
        return self.state.pending_title

    @property
    def usage(self) -> Usage:
        return self.state.usage

    @property
    def run(self) -> TurnRun | None:
        """The running turn, or None."""
        return self.queue.run

    @property
    def busy(self) -> bool:
        return self.queue.busy

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran."""
        return self._closed

    def defer_folder(self, folder: LazyFolder) -> None:
        """Make this new session's folder (``cwd``) only once a tool is about to run in it."""
        self._folder = folder

    async def workspace_ready(self) -> None:
        """Make sure the session's folder exists when it was left to be made on first use;
        raise ``WorkspaceError`` (or ``InvalidValue``) when it cannot be made."""
        if self._folder is not None:
            await self._folder.ready()

    @property
    def cwd(self) -> Path:
        text = self.state.record.cwd
        if text is not self._cwd_text:  # made once per folder, not per look (several per turn)
            self._cwd, self._cwd_text = Path(text), text
        return self._cwd

    @property
    def profile(self) -> str:
        return self.state.record.profile

    @property
    def hidden_tools(self) -> frozenset[str]:
        """The tool names ``set_tool_filter`` hides from the model."""
        return self.controls.hidden_tools

    def info(self) -> SessionInfo:
        """Return a snapshot of the session's state."""
        ref, source = self.kernel.models.for_session(self)
        provider = ModelRef.split(ref).provider
        record = self.state.record
        return SessionInfo(
            session_id=self.id,
            source=record.source,
            model=ref,
            provider=provider,
            model_source=source,
            cwd=record.cwd,
            profile=record.profile,
            title=record.title or self.state.pending_title,
            status=self.status,
            busy=self.busy,
            running=self.run is not None,
            queued=self.queue.waiting,
            usage=self.state.usage,
            reasoning_effort=record.reasoning_effort,
            parent_session_id=record.parent_session_id,
            channel_key=record.channel_key,
            persisted=self.state.persisted,
            created_at=record.created_at,
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

    def emit(self, event: AnyEvent) -> None:
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
        tracer = self.kernel.tracer
        if tracer is not None:
            tracer.observe(event)
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

    @property
    def approved_keys(self) -> AbstractSet[str]:
        """Approval keys remembered for this session (``session`` or ``always`` answers)."""
        return self._session_memory

    def remember_approval(self, keys: Iterable[str]) -> None:
        """Remember approval ``keys`` for the rest of this session."""
        self._session_memory.update(keys)

    def add_subscriber(self, queue: asyncio.Queue[Any]) -> None:
        """Deliver every later event of this session to ``queue`` too."""
        self._subscribers.append(queue)

    def remove_subscriber(self, queue: asyncio.Queue[Any]) -> None:
        """Stop delivering events to ``queue``."""
        if queue in self._subscribers:
            self._subscribers.remove(queue)

    # -- closing -----------------------------------------------------------------------------
    def check_open(self) -> None:
        """Raise ``SessionNotFound`` once the session is closed."""
        if self._closed:
            from hermes_core.errors import SessionNotFound

            raise SessionNotFound(self.id)

    async def close(self, *, reason: Literal["closed", "shutdown"] = "closed") -> None:
        """Interrupt, discard the queue, close questions, stop background work, release the lease."""
        if self._closed:
            return
        await self.interrupt(reason="system", discard_queue=True)
        self._closed = True
        await self.queue.settle(5)
        background = list(self.background_tasks.values())
        for task in background:
            task.cancel()
        self.kernel.pending_questions.close_where(lambda q: q.session_id == self.id, reason)
        # Let each task report BackgroundCompleted(interrupted) before the bus ends.
        await asyncio.gather(*background, return_exceptions=True)
        self.controls.kill_processes()
        await self.kernel.tool_sources.session_closed(self.id)
        self.kernel.registry.forget_session_tools(self.id)
        for q in self._subscribers:
            q.put_nowait(_DONE)
        await self.kernel.sessions.forget(self)


class _ExtraMap(MutableMapping[str, str]):
    """Per-session transport settings, written through to storage."""

    #: The owning session, held weakly (it holds this part).
    _session: BackRef[Session] = BackRef()

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
