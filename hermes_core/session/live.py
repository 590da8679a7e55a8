"""A live session: its state, the busy queue, steer, interrupt and the event bus
(docs/reference/core.md#core-api, #the-turn-loop).

The turn loop itself lives in :mod:`hermes_core.turn`; history operations (rewind, compress,
branch, reconcile) in :mod:`hermes_core.session.ops`.
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

from hermes_core.content import Part, normalize_content, parts_text
from hermes_core.errors import InvalidValue, RewindError, SessionBusy
from hermes_core.events import (
    Event,
    QuestionRequested,
    SessionChanged,
    TurnOutcome,
    Usage,
)
from hermes_core.history import is_user_turn, materialize, project
from hermes_core.ids import short_id
from hermes_core.observers import observe
from hermes_core.refs import ModelRef
from hermes_core.session import ops as session_ops
from hermes_core.session.queue import _DONE, QueueItem, Subscription, Turn, resolve_discarded
from hermes_core.session.types import (
    CompressResult,
    DiscardedItem,
    Interrupted,
    ModelSwitch,
    ReconcileResult,
    RewindResult,
    SessionInfo,
    Status,
    TitleResult,
)
from hermes_core.storage import NewRow, Row, SessionRecord

if TYPE_CHECKING:
    from hermes_core.content import SeedMessage
    from hermes_core.kernel import Kernel
    from hermes_core.subagents import Lineage
    from hermes_core.tools import FileAccess
    from hermes_core.turn import TurnRun

log = logging.getLogger("hermes.session")
MAX_QUEUED_CHARS = 1 << 20
MAX_STEER_CHARS = 65536
PROFILES = ("ask_everything", "default", "accept_edits", "off")


class Session:
    """A live session; create it with ``Kernel.open_session`` (never directly)."""

    #: Set on a delegated child by ``kernel.sessions.children`` (docs/reference/core.md#subagents).
    lineage: Lineage | None = None

    def __init__(self, kernel: Kernel, record: SessionRecord, rows: list[Row], persisted: bool) -> None:
        self.kernel = kernel
        self.id = record.id
        self._record = record
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
        return Path(self._record.cwd)

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

    def emit(self, event: Event) -> None:
        """Deliver an event to subscribers, the running turn's listeners, then observers."""
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

    # -- submitting --------------------------------------------------------------------------
    async def submit(
        self,
        content: str | Sequence[Part],
        *,
        owner: str,
        merge: bool = False,
        model: str | None = None,
        model_options: dict[str, Any] | None = None,
        answerable: frozenset[str] | set[str] = frozenset(),
        display_kind: str | None = None,
        track_events: bool = True,
    ) -> Turn:
        """Start a turn now, or queue it behind the running one
        (docs/reference/core.md#busy-input-and-the-queue).

        :param answerable: the question kinds (``approval``, ``clarify``, ``sudo``, ``secret``;
            ``ALL_KINDS`` for all) someone will answer with ``Kernel.answer``. The default, none,
            is the safe one for a host that cannot ask: a question is closed at once as
            ``no_answerer`` (an approval is denied), so no tool ever waits for an answer.

        :param track_events: keep a per-turn event queue for :meth:`Turn.events`; hosts that
            read the session bus instead pass False so a long turn's events are not held twice.
        """
        self._check_open()
        parts = normalize_content(content)
        text = parts_text(parts)
        if not text.strip() and len(parts) == len([p for p in parts if hasattr(p, "text")]):
            raise InvalidValue("content", message="the prompt is empty")
        if self.busy and self._queued_chars + len(text) > MAX_QUEUED_CHARS:
            raise SessionBusy("queue_full", "more than 1 MiB of queued text; wait or interrupt")
        if model is not None:
            await self.kernel.resolve_model(model, session=self)
        loop = asyncio.get_running_loop()
        item = QueueItem(
            item_id=short_id("q_"),
            owner=owner,
            parts=parts,
            merge=merge,
            model=model,
            model_options=dict(model_options) if model_options else None,
            answerable=frozenset(answerable),
            display_kind=display_kind,
            future=loop.create_future(),
        )
        turn = Turn(self, item, track_events=track_events)
        self._queue.append(item)
        self._queued_chars += len(text)
        if self._runner is None:
            # Start at once, synchronously: a steer or interrupt that follows sees this turn.
            self._start_next()
        else:
            self.mark_changed("queued")
        return turn

    def _start_next(self) -> None:
        from hermes_core.turn import TurnRun

        batch = self._take_batch()
        self.run = TurnRun(self, batch, queued=False)
        self._runner = asyncio.create_task(self._drain(), name=f"hermes-session-{self.id}")

    def position_of(self, item: QueueItem) -> int:
        """Return ``item``'s place in the queue (1 is next), 0 when it is not waiting."""
        for index, waiting in enumerate(self._queue):
            if waiting is item:
                return index + 1
        return 0

    def _take_batch(self) -> list[QueueItem]:
        head = self._queue.popleft()
        batch = [head]
        while self._queue and self._queue[0].merge:
            batch.append(self._queue.popleft())
        self._queued_chars -= sum(len(i.text) for i in batch)
        return batch

    async def _drain(self) -> None:
        from hermes_core.turn import TurnRun

        try:
            while self.run is not None:
                run = self.run
                try:
                    outcome = await run.execute()
                except Exception:  # execute() settles every failure; this is the last guard
                    log.exception("turn of session %s failed to settle", self.id)
                    outcome = TurnOutcome(status="error", reason="tool_crash", layer="agent")
                finally:
                    self.set_status("idle")
                    self.run = None
                for item in run.items:
                    if not item.future.done():
                        item.future.set_result(outcome)
                    for q in item.listeners:
                        q.put_nowait(_DONE)
                if self._queue and not self._closed:
                    batch = self._take_batch()
                    self.run = TurnRun(self, batch, queued=True)
        finally:
            self.run = None
            self._runner = None
            self.mark_changed("busy")

    def cancel_queued(self, item_id: str) -> bool:
        """Remove one waiting item; its outcome resolves ``interrupted`` (by user)."""
        for item in list(self._queue):
            if item.item_id == item_id:
                self._queue.remove(item)
                self._queued_chars -= len(item.text)
                resolve_discarded(item, "interrupted_by_user")
                self.mark_changed("queued")
                return True
        return False

    def steer(self, text: str) -> Literal["accepted", "idle", "settling"]:
        """Queue guidance for the next tool boundary of the running turn (docs/reference/core.md#steer)."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidValue("text", message="steer text is empty")
        if len(text) > MAX_STEER_CHARS:
            raise InvalidValue("text", message=f"steer text is longer than {MAX_STEER_CHARS} characters")
        run = self.run
        if run is None:
            return "idle"
        if run.settling:
            return "settling"
        run.steer_buffer.append(text)
        return "accepted"

    async def interrupt(
        self, *, reason: Literal["user", "system"] = "user", discard_queue: bool = False
    ) -> Interrupted:
        """Stop the running turn; optionally drop every waiting item (docs/reference/core.md#interrupt)."""
        discarded: list[DiscardedItem] = []
        why: Literal["interrupted_by_user", "interrupted_by_system"] = (
            "interrupted_by_user" if reason == "user" else "interrupted_by_system"
        )
        if discard_queue:
            while self._queue:
                item = self._queue.popleft()
                discarded.append(DiscardedItem(item.item_id, item.owner, item.text))
                resolve_discarded(item, why)
            self._queued_chars = 0
        run = self.run
        was_running = run is not None
        if run is not None:
            await run.interrupt(why)
        if discarded:
            self.mark_changed("queued")
        return Interrupted(was_running, tuple(discarded))

    def open_questions(self) -> list[QuestionRequested]:
        """Return this session's unanswered questions, in their original request shape."""
        return self.kernel.questions.open_for(self.id)

    # -- settings ----------------------------------------------------------------------------
    async def switch_model(
        self, ref: str, *, scope: Literal["session", "global", "once"] = "session"
    ) -> ModelSwitch:
        """Switch the model from the next turn on
        (docs/reference/core.md#branch-compress-titles-model-switch)."""
        if scope not in ("session", "global", "once"):
            raise InvalidValue("scope", ("session", "global", "once"))
        resolved = await self.kernel.resolve_model(ref, session=self)
        previous, _ = self.kernel.models.for_session(self)
        if scope == "once":
            self.once_model = resolved.ref
            self.mark_changed("model")
            return ModelSwitch(resolved.ref, resolved.provider, resolved.model, scope, previous)
        if scope == "global":
            await self.kernel.models.switch(resolved.ref)
        marker_id: int | None = None
        await self.update_record(model=resolved.ref, provider=resolved.provider)
        if not self._persisted:
            # A new session writes nothing until its first turn; store the record now so the
            # choice survives the process (``hermes run --session ID "/model X"`` then a turn).
            await self.append_rows([])
        elif self._rows:
            made = await self.append_rows(
                [
                    NewRow(
                        role="system",
                        content=f"The conversation continues with model {resolved.ref}.",
                        display_kind="model_switch",
                        model=resolved.ref,
                    )
                ]
            )
            marker_id = made[0].id
        self.mark_changed("model")
        return ModelSwitch(resolved.ref, resolved.provider, resolved.model, scope, previous, marker_id)

    async def set_cwd(self, path: Path) -> None:
        """Set the workspace: an absolute, existing directory, stored resolved."""
        p = Path(path)
        if not p.is_absolute():
            raise InvalidValue("cwd", message=f"cwd must be an absolute path: {path}")
        resolved = p.resolve()
        if not resolved.is_dir():
            raise InvalidValue("cwd", message=f"cwd is not an existing directory: {path}")
        await self.update_record(cwd=str(resolved))
        self.mark_changed("cwd")

    async def set_profile(self, profile: str) -> None:
        """Set the approval profile (docs/reference/core.md#approval-profiles)."""
        if profile not in PROFILES:
            raise InvalidValue("profile", PROFILES)
        await self.update_record(profile=profile)
        self.mark_changed("profile")

    async def set_title(self, title: str) -> TitleResult:
        """Set an explicit title; pending until the first row exists."""
        from hermes_core.titles import clean_title

        cleaned = clean_title(title)
        if self._persisted:
            await self.update_record(title=cleaned, title_origin="explicit")
        else:
            self._pending_title = cleaned
            self._record = dataclasses.replace(self._record, title_origin="explicit")
        from hermes_core.events import TitleChanged

        self.emit(TitleChanged(session_id=self.id, title=cleaned, origin="explicit"))
        return TitleResult(cleaned, pending=not self._persisted)

    async def set_reasoning_effort(self, effort: str | None) -> None:
        """Set the reasoning effort (``none`` … ``xhigh``) or clear it."""
        allowed = ("none", "minimal", "low", "medium", "high", "xhigh")
        if effort is not None and effort not in allowed:
            raise InvalidValue("reasoning_effort", allowed)
        await self.update_record(reasoning_effort=effort)
        self.mark_changed("reasoning_effort")

    async def set_system_overlay(self, text: str | None) -> None:
        """Layer extra instructions on the core system prompt (stored with the session)."""
        await self.update_record(system_overlay=text)

    async def stop_processes(self, *, grace: float = 3.0) -> int:
        """Stop the background processes the ``terminal`` tool started for this session.

        Each process group gets SIGTERM, then SIGKILL after ``grace`` seconds; running turns are
        left alone. Returns how many were still running.
        """
        from hermes_core.core_tools import kill_group

        alive = [p for p in self._processes if p.poll() is None]
        self._processes.clear()
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(loop.run_in_executor(self.kernel.executor, kill_group, p, grace) for p in alive)
        )
        return len(alive)

    def set_tool_filter(self, hidden: frozenset[str]) -> None:
        """Hide these tools from the model for the following turns."""
        self._hidden_tools = frozenset(hidden)

    @property
    def hidden_tools(self) -> frozenset[str]:
        """The tool names ``set_tool_filter`` hides from the model."""
        return self._hidden_tools

    # -- history -----------------------------------------------------------------------------
    async def history(self, *, include_archived: bool = False, replay: bool = False) -> list[Row]:
        """Return the projection hosts see (docs/reference/core.md#messages-and-the-projection)."""
        if include_archived and self._persisted:
            rows = await self.kernel.storage.load_rows(self.id, include_archived=True)
            return [r for r in rows if not r.active or r in project([r], replay=replay)]
        return project(self._rows, replay=replay)

    async def rewind(self, *, before_row_id: int, allow_empty: bool) -> RewindResult:
        """Soft-archive the rows from ``before_row_id`` on; see :func:`session_ops.rewind`."""
        return await session_ops.rewind(self, before_row_id=before_row_id, allow_empty=allow_empty)

    async def undo(self) -> RewindResult:
        """Soft-archive the last user turn and everything after it (``/undo``, ``/retry``;
        docs/reference/core.md#rewind-and-reconcile).

        The typed command is the consent, so emptying the transcript is allowed.

        :returns: the ``RewindResult``, with ``survivor_user_row_ids``.
        :raises SessionBusy: while a turn runs or prompts wait.
        :raises RewindError: code 4018 when there is no user turn to undo.
        """
        if self.busy:
            raise SessionBusy("busy", "cannot undo while a turn is running; interrupt first")
        last = next((r for r in reversed(self._rows) if is_user_turn(r)), None)
        if last is None:
            raise RewindError(4018, "there is no user turn to undo", {"user_turn_count": 0})
        return await self.rewind(before_row_id=last.id, allow_empty=True)

    async def reconcile(self, messages: Sequence[SeedMessage]) -> ReconcileResult:
        """Make the transcript match a client's ``messages``; see :func:`session_ops.reconcile`."""
        return await session_ops.reconcile(self, messages)

    async def compress(self, *, focus_topic: str | None = None) -> CompressResult:
        """Summarise older turns into one row; see :func:`session_ops.compress`."""
        return await session_ops.compress(self, focus_topic=focus_topic)

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
            self, owner=owner, count=count, up_to_row_id=up_to_row_id, title=title, cwd=cwd
        )

    def background(self, text: str, *, answerable: frozenset[str] | set[str] = frozenset()) -> str:
        """Run a separate one-shot agent on this session's model, cwd and profile
        (docs/reference/core.md#background-tasks-and-one-shot-calls).

        :param answerable: the question kinds the host answers for the task, as for
            :meth:`submit`; by default none, so a question is denied at once instead of waiting.
        """
        return self.kernel.sessions.start_background(self, text, answerable=frozenset(answerable))

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
