"""The live sessions of one kernel: open, resume, look up, keep their leases, close.

:class:`Sessions` is reached as ``kernel.sessions``. It owns the table of sessions open in this
process and the renewal of their writer leases; ``exists`` is the one question transports ask
before treating an id as "unknown" (live here or stored).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.background import start as start_background_task
from hermes_core.errors import InvalidValue, SessionInUse, SessionNotFound, StorageError
from hermes_core.session.folders import FolderBatch
from hermes_core.session.new_lease import LEASE_TTL_S
from hermes_core.session.open import is_session_id, open_session, refuse_running_child

if TYPE_CHECKING:
    from hermes_core.budgets import ChargeTo
    from hermes_core.content import SeedMessage
    from hermes_core.events import AnyEvent
    from hermes_core.kernel import Kernel
    from hermes_core.session.live import Session
    from hermes_core.session.types import BranchSeed, StoredSession
    from hermes_core.storage import RecordClaim, SessionPage, SessionRecord
    from hermes_core.subagents import Subagents

log = logging.getLogger("hermes.kernel")
LEASE_RENEW_S = 10.0


class Sessions:
    """The session table of one kernel (``kernel.sessions``)."""

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._live: dict[str, Session] = {}
        self._children: Subagents | None = None
        #: Makes new sessions' folders on the executor (see :class:`FolderBatch`).
        self.folders = FolderBatch(kernel.executor)
        # One lock per session id while it is being opened, forgotten or written without being
        # open (weak values: a lock lives while someone holds or awaits it).
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    @property
    def children(self) -> Subagents:
        """The delegated children of these sessions (docs/reference/core.md#subagents); made on
        first use, since opening a session delegates nothing."""
        if self._children is None:
            from hermes_core.subagents import Subagents

            self._children = Subagents(self._kernel)
        return self._children

    def holding(self, session_id: str) -> _Holding:
        """Hold this kernel's lock on ``session_id`` (``async with``): opening it, releasing its
        lease and a write made without opening it (:meth:`update_record`) never overlap."""
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        return _Holding(lock)

    # -- the live table ----------------------------------------------------------------------
    def get(self, session_id: str) -> Session | None:
        """Return the live session with this id, if open in this process."""
        return self._live.get(session_id)

    def emit(self, session_id: str, event: AnyEvent) -> None:
        """Emit ``event`` on the live session ``session_id``; nothing happens when it is not open."""
        session = self._live.get(session_id)
        if session is not None:
            session.emit(event)

    @property
    def live(self) -> list[Session]:
        """The sessions open in this process, oldest first."""
        return list(self._live.values())

    def add(self, session: Session) -> None:
        """Enter a just-opened session (its lease is held, or being taken for a new id)."""
        self._live[session.id] = session

    def start_background(
        self,
        session: Session,
        text: str,
        *,
        answerable: frozenset[str] = frozenset(),
        charge: ChargeTo | None = None,
    ) -> str:
        """Start a background task for ``session`` (see :meth:`Session.background`); return its id."""
        return start_background_task(session, text, answerable=answerable, charge=charge)

    async def exists(self, session_id: str) -> bool:
        """Tell whether a session with this id is live here or stored."""
        if session_id in self._live:
            return True
        return await self._kernel.storage.get_session(session_id) is not None

    async def find(self, session_id: str) -> SessionRecord | None:
        """Return the stored record of this session (live ones are stored too), or None."""
        return await self._kernel.storage.get_session(session_id)

    # -- opening -----------------------------------------------------------------------------
    async def open(
        self,
        session_id: str | None = None,
        *,
        source: str,
        owner: str,
        cwd: Path | None = None,
        profile: str | None = None,
        model: str | None = None,
        title: str | None = None,
        seed: Sequence[SeedMessage] = (),
        channel_key: str | None = None,
        parent_session_id: str | None = None,
        create_cwd: bool = False,
        branch: BranchSeed | None = None,
        new: bool = False,
        claims: Sequence[RecordClaim] = (),
    ) -> Session:
        """Open a stored or live session, or create one; take its writer lease
        (docs/reference/core.md#sessions-and-storage).

        With ``create_cwd``, ``cwd`` (and its parents) is made when missing, on the executor
        while storage is read. With ``new``, the caller made ``session_id`` for this open (e.g.
        from 64 random bits), so storage cannot hold it and is not read, and the session is
        handed out while its lease (and its new folder, when its parent is known) is being
        taken: its first write waits for them (docs/reference/core.md#writer-lease).
        ``claims`` (with ``new``) are records stored in that first write too, e.g. the id's tenant
        claim (:meth:`SessionTenants.new_claim`): when one cannot be stored, nothing is, and the
        first write fails as with a lease that cannot be taken.
        """
        return await open_session(
            self._kernel,
            session_id,
            source=source,
            owner=owner,
            cwd=cwd,
            profile=profile,
            model=model,
            title=title,
            seed=seed,
            channel_key=channel_key,
            parent_session_id=parent_session_id,
            create_cwd=create_cwd,
            branch=branch,
            new=new,
            claims=claims if new else (),
        )

    async def lookup(self, id_or_title: str) -> SessionRecord | None:
        """Return the stored session :meth:`resume` would open, without opening it: by id, else
        by exact title (the most recently active one)."""
        storage = self._kernel.storage
        record = None
        if is_session_id(id_or_title):
            record = await storage.get_session(id_or_title)
        if record is None:
            record = await storage.find_session_by_title(id_or_title)
        return record

    async def resume(self, id_or_title: str, *, owner: str) -> Session:
        """Open a stored session by id, else by exact title (the most recently active)."""
        live = self._live.get(id_or_title)
        if live is not None:
            refuse_running_child(live)
            return live
        record = await self.lookup(id_or_title)
        if record is None:
            raise SessionNotFound(id_or_title)
        return await self.open(record.id, source=record.source, owner=owner)

    async def forget(self, session: Session) -> None:
        """Drop a closed session from the table, close its delegated children, release its lease."""
        if self._live.get(session.id) is session:
            del self._live[session.id]
        kernel = self._kernel
        if self._children is not None:
            await self._children.close_children(session.id)
        try:
            await kernel.events.detach(session)  # sealed while the lease is still ours
        except Exception:
            log.warning("closing the event log of %s failed", session.id, exc_info=True)
        async with self.holding(session.id):
            if session.id in self._live:
                return  # opened again meanwhile: the lease is the new session's
            if not session.state.lease_started:
                return  # a new session that wrote nothing never took its lease
            try:
                await session.lease_held()  # a new session's lease may still be being taken
            except Exception:
                return  # never taken: nothing to release
            try:
                await kernel.storage.release_lease(session.id, kernel.lease_owner)
            except Exception:
                log.warning("releasing the lease of %s failed", session.id, exc_info=True)

    async def update_record(
        self,
        session_id: str,
        fields: Mapping[str, Any],
        *,
        only_if: Callable[[SessionRecord], bool] | None = None,
    ) -> bool:
        """Change a stored session's columns under its writer lease, whether or not it is open.

        A session open in this process is written through it (under the lease it holds). One that
        is not is written under the lease taken for this write alone and released at once, so a
        follow-up that ends after its turn (a refined title) never writes without the lease.

        :param fields: columns as in :class:`~hermes_core.storage.SessionRecord`.
        :param only_if: a check of the current record, made under the lease; False skips the write.
        :returns: whether the fields were written.
        :raises SessionInUse: another process holds the lease.
        :raises LeaseLost: the lease moved to another process while this one wrote.
        """
        kernel = self._kernel
        async with self.holding(session_id):
            live = self._live.get(session_id)
            if live is not None:
                if only_if is not None and not only_if(live.record):
                    return False
                await live.update_record(**fields)
                return True
            storage = kernel.storage
            holder = await storage.acquire_lease(session_id, kernel.lease_owner, LEASE_TTL_S)
            if holder is not None:
                raise SessionInUse(holder)
            try:
                record = await storage.get_session(session_id)
                if record is None or (only_if is not None and not only_if(record)):
                    return False
                await storage.update_session(session_id, fields)
                return True
            finally:
                try:
                    await storage.release_lease(session_id, kernel.lease_owner)
                except Exception:
                    log.warning("releasing the lease of %s failed", session_id, exc_info=True)

    async def close_all(self, reason: Literal["closed", "shutdown"]) -> None:
        """Close every live session (at shutdown); a failure is logged, the rest still close."""
        for session in list(self._live.values()):
            try:
                await session.close(reason=reason)
            except Exception:
                log.warning("closing session %s failed", session.id, exc_info=True)

    # -- stored sessions ---------------------------------------------------------------------
    async def list(
        self, *, limit: int = 50, cursor: str | None = None, cwd: str | None = None, title: str | None = None
    ) -> SessionPage:
        """List stored sessions by last activity (keyset paging)."""
        if not isinstance(limit, int) or limit < 1:
            raise InvalidValue("limit", "a positive integer")
        return await self._kernel.storage.list_sessions(
            limit=min(limit, 1000), cursor=cursor, cwd=cwd, title=title
        )

    @property
    def durable(self) -> bool:
        """Whether stored sessions outlive this process: the backend says so with its ``durable``
        attribute (``memory`` says False; a backend that does not say is taken as durable)."""
        return bool(getattr(self._kernel.storage, "durable", True))

    async def storage_report(self) -> dict[str, Any]:
        """Check the storage with one read: ``{"ok", "backend", ...}`` (never raises)."""
        from hermes_core.storage_report import storage_report

        try:
            storage = self._kernel.storage
        except StorageError as exc:
            return {"ok": False, "backend": self._kernel.settings.storage.backend, "message": str(exc)}
        return await storage_report(storage, self._kernel.settings.storage.backend)

    async def latest_for_channel(self, channel_key: str) -> str | None:
        """Return the most recent session carrying this channel key."""
        return await self._kernel.storage.latest_session_for_channel(channel_key)

    async def stored(self, session_id: str) -> StoredSession:
        """Read a stored session and its projected rows without taking the lease."""
        from hermes_core.history import project
        from hermes_core.session.types import StoredSession

        storage = self._kernel.storage
        record = await storage.get_session(session_id)
        if record is None:
            raise SessionNotFound(session_id)
        rows = await storage.load_rows(session_id)
        return StoredSession(record, project(rows))

    # -- leases ------------------------------------------------------------------------------
    async def renew_leases(self) -> None:
        """Renew the writer lease of every live session every ``LEASE_RENEW_S`` until cancelled."""
        while True:
            await asyncio.sleep(LEASE_RENEW_S)
            await self.renew_once()

    async def renew_once(self) -> None:
        """Renew each live session's lease once; outages and take-overs are reported on it."""
        kernel = self._kernel
        for session in list(self._live.values()):
            if session.state.lease_pending or session.state.lease_failed:
                continue  # just being taken (for LEASE_TTL_S), or never ours
            try:
                held = await kernel.storage.renew_lease(session.id, kernel.lease_owner, LEASE_TTL_S)
            except Exception as exc:
                log.warning("renewing the lease of %s failed", session.id, exc_info=True)
                session.report_problem(
                    "storage", f"renewing the session's writer lease failed: {exc}", once="renew"
                )
                continue
            session.forget_problem("renew")  # report the next outage again
            if held is False and self._live.get(session.id) is session:
                log.warning("the lease of %s is held by another process now", session.id)
                session.report_problem(
                    "lease_lost",
                    "another Hermes process took over this session's writer lease; "
                    "close it here and resume it there",
                    once="lease_lost",
                )


class _Holding:
    """``async with`` one session id's lock (and keep the lock alive meanwhile: the table holds
    it weakly). A class rather than an ``asynccontextmanager``: taken twice per session (open,
    close), where the generator's set-up cost more than the lock."""

    __slots__ = ("_lock",)

    def __init__(self, lock: asyncio.Lock) -> None:
        self._lock = lock

    async def __aenter__(self) -> None:
        await self._lock.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self._lock.release()
