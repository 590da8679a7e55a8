"""Opening a session: ids, the writer lease, the stored record and the workspace
(docs/reference/core.md#sessions-and-storage).

:meth:`Kernel.open_session` is the public entry; this module holds its procedure so the kernel
stays about wiring. The lease and the stored record are asked for together (storage answers
both in one wake-up), and a folder the caller wants made is made on the executor meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_core.errors import InvalidValue, SessionBusy, SessionInUse
from hermes_core.ids import mint_session_id
from hermes_core.outlive import retrieve
from hermes_core.session.folders import LazyFolder
from hermes_core.session.new_lease import NewLease, take_lease
from hermes_core.workspace import check_workspace

if TYPE_CHECKING:
    from hermes_core.content import SeedMessage
    from hermes_core.kernel import Kernel
    from hermes_core.session.live import Session
    from hermes_core.session.types import BranchSeed
    from hermes_core.storage import RecordClaim

ID_RE = re.compile(r"^[A-Za-z0-9_:.\-]{1,256}$")

log = logging.getLogger("hermes.session")


def check_session_id(session_id: str) -> str:
    """Validate a client-chosen session id (docs/reference/core.md#session-ids)."""
    if not is_session_id(session_id):
        raise InvalidValue(
            "session_id", message="session ids are 1-256 characters of A-Z a-z 0-9 _ : . - (not '.' or '..')"
        )
    return session_id


def is_session_id(value: object) -> bool:
    """Tell whether ``value`` follows the session id grammar."""
    return isinstance(value, str) and bool(ID_RE.match(value)) and value not in (".", "..")


def refuse_running_child(session: Session) -> None:
    """Refuse to hand a running delegated child out as a session of its own: its parent's
    ``delegate_task`` drives it, and hosts reach it through the subagent methods."""
    lineage = session.lineage
    if lineage is not None:
        raise SessionBusy(
            "subagent",
            f"session {session.id} is a running subagent of session {lineage.parent_id}; steer or stop "
            "it through its parent, or open it once it has ended",
        )


async def open_session(
    kernel: Kernel,
    session_id: str | None,
    *,
    source: str,
    owner: str,
    cwd: Path | None,
    profile: str | None,
    model: str | None,
    title: str | None,
    seed: Sequence[SeedMessage],
    channel_key: str | None,
    parent_session_id: str | None,
    create_cwd: bool,
    branch: BranchSeed | None = None,
    new: bool = False,
    claims: Sequence[RecordClaim] = (),
) -> Session:
    """Do what :meth:`Kernel.open_session` promises (its docstring has the parameters)."""
    from hermes_core.session.live import PROFILES

    if session_id is None:
        session_id = mint_session_id()
    else:
        check_session_id(session_id)
    live = kernel.live_session(session_id)
    if live is not None:
        refuse_running_child(live)
        return live
    if profile is not None and profile not in PROFILES:
        raise InvalidValue("profile", PROFILES)
    # One open (or lease release, or write without opening) of an id at a time in this kernel.
    async with kernel.sessions.holding(session_id):
        live = kernel.live_session(session_id)
        if live is not None:
            refuse_running_child(live)
            return live
        return await _open_stored_or_new(
            kernel,
            session_id,
            source=source,
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
            claims=claims,
        )


async def _open_stored_or_new(
    kernel: Kernel,
    session_id: str,
    *,
    source: str,
    cwd: Path | None,
    profile: str | None,
    model: str | None,
    title: str | None,
    seed: Sequence[SeedMessage],
    channel_key: str | None,
    parent_session_id: str | None,
    create_cwd: bool,
    branch: BranchSeed | None,
    new: bool,
    claims: Sequence[RecordClaim] = (),
) -> Session:
    """Take the lease and read (or create) the session; the caller holds the id's lock.

    ``new``: the id was made for this open, so storage cannot hold it and is not read.
    ``claims``: with ``new``, records stored with the session in its first write (the id's
    tenant claim); nothing is written when one cannot be.
    """
    from hermes_core.session.live import Session

    storage = kernel.storage
    folders = kernel.sessions.folders
    preparing: asyncio.Future[Path] | None = None
    lazy: LazyFolder | None = None
    predicted = folders.predict(Path(cwd)) if new and create_cwd and cwd is not None else None
    if predicted is not None and cwd is not None:
        # A new session's folder whose resolved path is known already: made once a tool is
        # about to run in it (most chats run none), never on the way to the first token.
        lazy = LazyFolder(folders, Path(cwd), predicted)
    elif create_cwd and cwd is not None:
        # Filesystem calls cost 15-100 µs each here (more while SQLite writes): the folder is
        # made and checked on the executor while storage is read, off the loop's path.
        preparing = folders.prepare(Path(cwd))
        preparing.add_done_callback(retrieve)  # a stored session never awaits it
    fresh = _Fresh(
        source, cwd, preparing, profile, model, title, seed, channel_key, parent_session_id, branch
    )
    if new:
        # Nobody else can know the id yet, so nobody can hold its lease: the session is handed
        # out at once, and its lease is taken by its first write (in the same transaction where
        # storage can), so a first turn's model call goes out meanwhile
        # (docs/reference/core.md#writer-lease).
        if lazy is not None:
            fresh = dataclasses.replace(fresh, made=predicted)
        # Its tenant's claim (nobody else can know the id either) is stored with it: the id is
        # not revealed, nor anything written, without it.
        lease = NewLease(kernel, session_id, claims)
        try:
            session = await _create(kernel, session_id, fresh, lease)
            if lazy is not None:
                session.defer_folder(lazy)
            await kernel.events.attach(session, None)
        except BaseException:
            await lease.abandon()
            raise
        kernel.sessions.add(session)
        return session
    # Both queued at once: storage answers them together (one wake-up instead of two).
    reading = asyncio.ensure_future(storage.get_session(session_id))
    try:
        holder = await take_lease(kernel, session_id)
    except BaseException:
        reading.cancel()
        with contextlib.suppress(BaseException):
            await reading
        raise
    if holder is not None:
        with contextlib.suppress(Exception):
            await reading
        raise SessionInUse(holder)
    try:
        record = await reading
    except BaseException:
        await storage.release_lease(session_id, kernel.lease_owner)
        raise
    logged = None
    try:
        if record is not None:
            # Its event log's newest chunk is read beside its rows (one wake-up on SQLite); a
            # session not stored yet has no log, so a new one costs no read.
            logged = kernel.events.read_last(session_id)
            if logged is not None:
                logged.add_done_callback(retrieve)
            rows = await storage.load_rows(session_id)
            session = Session(kernel, record, rows, persisted=True)
        else:
            session = await _create(kernel, session_id, fresh, None)
        # The lease is ours by now: a former holder that still writes the log is caught by the
        # compare-and-set of the first write.
        await kernel.events.attach(session, await logged if logged is not None else None)
    except BaseException:
        await storage.release_lease(session_id, kernel.lease_owner)
        raise
    kernel.sessions.add(session)
    return session


@dataclasses.dataclass(frozen=True, slots=True)
class _Fresh:
    """What a session that storage does not hold is created from."""

    source: str
    cwd: Path | None
    preparing: asyncio.Future[Path] | None
    profile: str | None
    model: str | None
    title: str | None
    seed: Sequence[SeedMessage]
    channel_key: str | None
    parent_session_id: str | None
    branch: BranchSeed | None
    #: The folder's resolved path, when it is known without waiting for ``preparing``.
    made: Path | None = None


async def _create(kernel: Kernel, session_id: str, fresh: _Fresh, lease: NewLease | None) -> Session:
    """Make the live session of an id storage does not hold (written at its first row).

    :param lease: a new id's lease, taken by (or before) the session's first write.
    """
    from hermes_core.session.live import Session
    from hermes_core.storage import NewRow, SessionRecord

    if fresh.preparing is not None:
        workspace = await fresh.preparing
    elif fresh.made is not None:
        workspace = fresh.made
    else:
        workspace = check_workspace(Path(fresh.cwd) if fresh.cwd is not None else Path.cwd())
    branch = fresh.branch
    resolved = await kernel.resolve_model(fresh.model) if fresh.model and branch is None else None
    record = SessionRecord(
        id=session_id,
        source=fresh.source,
        cwd=str(workspace),
        profile=fresh.profile or "default",
        model=resolved.ref if resolved else None,
        provider=resolved.provider if resolved else None,
        reasoning_effort=kernel.settings.reasoning_effort,
        channel_key=fresh.channel_key,
        parent_session_id=fresh.parent_session_id,
        created_at=time.time(),
    )
    if branch is not None:
        record = dataclasses.replace(
            record,
            model=branch.model,
            provider=branch.provider,
            title=branch.title,
            title_origin="explicit",
            reasoning_effort=branch.reasoning_effort,
            system_overlay=branch.system_overlay,
        )
    session = Session(kernel, record, [], persisted=False)
    if lease is not None:
        session.state.expect_lease(lease)
    if fresh.title:
        from hermes_core.titles import clean_title

        session.set_pending_title(clean_title(fresh.title), "explicit")
    if fresh.seed:
        await session.append_rows([NewRow(role=m.role, content=m.text, parts=m.parts) for m in fresh.seed])
    if branch is not None:
        from hermes_core.session.ops import copy_rows

        await copy_rows(session, branch.rows)
    return session
