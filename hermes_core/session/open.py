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
import functools
import logging
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core.errors import InvalidValue, SessionBusy, SessionInUse, StorageError
from hermes_core.ids import mint_session_id
from hermes_core.lease_owner import holder_is_gone
from hermes_core.workspace import check_workspace

if TYPE_CHECKING:
    from hermes_core.content import SeedMessage
    from hermes_core.kernel import Kernel
    from hermes_core.session.live import Session
    from hermes_core.session.types import BranchSeed

ID_RE = re.compile(r"^[A-Za-z0-9_:.\-]{1,256}$")
LEASE_TTL_S = 30.0

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


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Consume a finished future's outcome so that asyncio never reports it as unretrieved."""
    if not future.cancelled():
        future.exception()


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
    claiming: asyncio.Future[None] | None = None,
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
            claiming=claiming,
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
    claiming: asyncio.Future[None] | None = None,
) -> Session:
    """Take the lease and read (or create) the session; the caller holds the id's lock.

    ``new``: the id was made for this open, so storage cannot hold it and is not read.
    ``claiming``: with ``new``, the id's tenant claim being made; the first write waits for it.
    """
    from hermes_core.session.live import Session

    storage = kernel.storage
    preparing: asyncio.Future[Path] | None = None
    if create_cwd and cwd is not None:
        # Filesystem calls cost 15-100 µs each here (more while SQLite writes): the folder is
        # made and checked on the executor while storage is read, off the loop's path.
        preparing = kernel.sessions.folders.prepare(Path(cwd))
        preparing.add_done_callback(_retrieve)  # a stored session never awaits it
    fresh = _Fresh(
        source, cwd, preparing, profile, model, title, seed, channel_key, parent_session_id, branch
    )
    if new:
        # Nobody else can know the id yet, so nobody can hold its lease: the session is handed
        # out while the lease is being taken and its first write waits for it instead, so a
        # first turn's model call goes out meanwhile (docs/reference/core.md#writer-lease).
        taking = asyncio.ensure_future(_take_new_lease(kernel, session_id))
        taking.add_done_callback(_retrieve)
        ready: asyncio.Future[None] = taking
        also: list[tuple[asyncio.Future[Any], str, Callable[[Any], BaseException | None] | None]] = []
        predicted = kernel.sessions.folders.predict(Path(cwd)) if preparing and cwd else None
        if preparing is not None and predicted is not None:
            # Its folder's resolved path is known already: it is made meanwhile too, and
            # checked before the first write (a tool cannot run before then).
            also.append(
                (
                    preparing,
                    f"the workspace folder of the new session {session_id} cannot be made",
                    functools.partial(_not_where_predicted, predicted),
                )
            )
            fresh = dataclasses.replace(fresh, preparing=None, made=predicted)
        if claiming is not None:
            # Its tenant's claim (nobody else can know the id either): the id is not revealed,
            # nor anything written, before the claim is stored.
            also.append((claiming, f"the new session {session_id} cannot be claimed for its tenant", None))
        if also:
            ready = _settle_new(kernel, session_id, taking, also)
            ready.add_done_callback(_retrieve)
        try:
            session = await _create(kernel, session_id, fresh, ready)
            await kernel.events.attach(session, None)
        except BaseException:
            await _release_when_taken(kernel, session_id, ready)
            raise
        kernel.sessions.add(session)
        return session
    # Both queued at once: storage answers them together (one wake-up instead of two).
    reading = asyncio.ensure_future(storage.get_session(session_id))
    try:
        holder = await _lease(kernel, session_id)
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
                logged.add_done_callback(_retrieve)
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


async def _create(
    kernel: Kernel, session_id: str, fresh: _Fresh, taking: asyncio.Future[None] | None
) -> Session:
    """Make the live session of an id storage does not hold (written at its first row).

    :param taking: the lease being taken, for a new id: the session writes nothing before it is.
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
    if taking is not None:
        session.state.expect_lease(taking)
    if fresh.title:
        from hermes_core.titles import clean_title

        session.set_pending_title(clean_title(fresh.title), "explicit")
    if fresh.seed:
        await session.append_rows([NewRow(role=m.role, content=m.text, parts=m.parts) for m in fresh.seed])
    if branch is not None:
        from hermes_core.session.ops import copy_rows

        await copy_rows(session, branch.rows)
    return session


async def _lease(kernel: Kernel, session_id: str) -> str | None:
    """Take the writer lease; return None, or the live holder that keeps it."""
    storage = kernel.storage
    holder = await storage.acquire_lease(session_id, kernel.lease_owner, LEASE_TTL_S)
    if holder is not None and holder_is_gone(holder):
        # The holder was killed without releasing (kill -9, a crash): take over now instead of
        # making a restarted client wait for the lease to expire.
        log.info("taking over the lease of %s from %s, which is no longer running", session_id, holder)
        holder = await storage.acquire_lease(session_id, kernel.lease_owner, LEASE_TTL_S, take_over=holder)
    return holder


async def _take_new_lease(kernel: Kernel, session_id: str) -> None:
    """Take a new id's writer lease; a holder (which nobody can be) fails the first write."""
    holder = await _lease(kernel, session_id)
    if holder is not None:
        raise StorageError(f"the writer lease of the new session {session_id} is held by {holder}")


_GIVING_BACK: set[asyncio.Future[None]] = set()


def _not_where_predicted(predicted: Path, folder: Path) -> BaseException | None:
    """Return the failure of a new session's folder made elsewhere than predicted."""
    if folder != predicted:
        return InvalidValue("cwd", message=f"the folder resolves to {folder}, not {predicted}")
    return None


def _settle_new(
    kernel: Kernel,
    session_id: str,
    taking: asyncio.Future[None],
    also: Sequence[tuple[asyncio.Future[Any], str, Callable[[Any], BaseException | None] | None]],
) -> asyncio.Future[None]:
    """Return a future of a new session's lease and every one of ``also`` (a condition, what
    its failure means, and a check of its result: its failure, or None) done; a condition that
    fails gives the lease back and fails it with a :class:`StorageError`, like a lease that
    cannot be taken.

    Done callbacks, not a task: this runs for every new stateless chat, and a task costs the
    loop a step of its own.
    """
    ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiting = len(also)

    def copy(done: asyncio.Future[None]) -> None:
        if ready.done():
            return
        if done.cancelled():
            ready.cancel()
        elif (failure := done.exception()) is not None:
            ready.set_exception(failure)
        else:
            ready.set_result(None)

    def copy_failure(failure: BaseException) -> None:
        if not ready.done():
            ready.set_exception(failure)

    def condition_done(
        done: asyncio.Future[Any], what: str, check: Callable[[Any], BaseException | None] | None
    ) -> None:
        nonlocal waiting
        failure: BaseException | None = asyncio.CancelledError() if done.cancelled() else done.exception()
        if failure is None and check is not None:
            failure = check(done.result())
        if failure is None:
            waiting -= 1
            if waiting == 0:
                if taking.done():
                    copy(taking)  # now, not one loop pass later through a callback
                else:
                    taking.add_done_callback(copy)
            return
        if waiting <= 0:
            return  # another condition failed already: the lease is being given back
        waiting = -1
        message = f"{what}: {failure}"
        giving_back = asyncio.ensure_future(_release_when_taken(kernel, session_id, taking))
        _GIVING_BACK.add(giving_back)  # the loop keeps only a weak reference to a task
        giving_back.add_done_callback(_GIVING_BACK.discard)
        giving_back.add_done_callback(lambda _: copy_failure(StorageError(message)))

    for condition, what, check in also:
        condition.add_done_callback(functools.partial(condition_done, what=what, check=check))
    return ready


async def _release_when_taken(kernel: Kernel, session_id: str, taking: asyncio.Future[None]) -> None:
    """Release a lease being taken for a session that was never handed out, once it is taken."""
    try:
        await asyncio.shield(taking)
    except BaseException:
        return  # not taken: nothing to release
    await kernel.storage.release_lease(session_id, kernel.lease_owner)
