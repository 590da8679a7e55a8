"""A new session's writer lease, taken by its first write where storage can do both at once
(docs/reference/core.md#writer-lease).

An id made for this open is known to nobody else, so nobody can hold its lease. Storage that
offers ``create_leased_session`` takes the lease in the same transaction that stores the session
and its first rows: one write on the way to a new chat's first token instead of two. The lease
is taken on its own (``acquire_lease``, as for any other storage) only when something must hold
it before the first write: the id about to be revealed (a stream's head leaving early), or a
storage without that method, where it is taken at once as before.

The records a new session claims (its tenant's claim of the id, :class:`RecordClaim`) go into
that same write; when the lease is taken on its own they are claimed beside it, and the first
write waits for them. Either way a claim that cannot be stored fails the first write with a
:class:`~hermes_core.errors.StorageError`, and nothing is written.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hermes_core.errors import StorageError
from hermes_core.lease_owner import holder_is_gone
from hermes_core.outlive import outlive, retrieve

if TYPE_CHECKING:
    from hermes_core.kernel import Kernel
    from hermes_core.storage import NewRow, RecordClaim, SessionRecord

__all__ = ["LEASE_TTL_S", "Condition", "NewLease", "release_when_taken", "take_lease"]

#: A condition of a new session's first write: a future, what its failure means, and a check of
#: its result (a failure, or None).
Condition = tuple[asyncio.Future[Any], str, Callable[[Any], BaseException | None] | None]

LEASE_TTL_S = 30.0

log = logging.getLogger("hermes.session")


class NewLease:
    """The writer lease of a session whose id was made for its open, and its first write.

    :param kernel: the kernel (storage, lease owner).
    :param session_id: the new id.
    :param claims: records stored with the session (see :class:`RecordClaim`); claimed on their
        own, beside the lease, only when the lease is taken on its own.
    """

    def __init__(self, kernel: Kernel, session_id: str, claims: Sequence[RecordClaim] = ()) -> None:
        self._kernel = kernel
        self._id = session_id
        self._claims = tuple(claims)
        # Done once the lease is ours and every condition holds; failed otherwise. Set by the
        # first write, or by taking the lease on its own.
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._ready.add_done_callback(retrieve)
        self._started = False
        # The first write while it takes the lease (see :meth:`held`).
        self._writing: asyncio.Future[None] | None = None
        self._merged = callable(getattr(kernel.storage, "create_leased_session", None))
        if not self._merged:
            self.take_alone()

    @property
    def started(self) -> bool:
        """Whether taking the lease began (on its own or by the first write)."""
        return self._started

    @property
    def pending(self) -> bool:
        """Whether the lease is not ours yet (not asked for, or being taken)."""
        return not self._ready.done()

    @property
    def failed(self) -> bool:
        """Whether taking the lease (or a condition) failed: the session must write nothing."""
        ready = self._ready
        return ready.done() and (ready.cancelled() or ready.exception() is not None)

    def take_alone(self) -> asyncio.Future[None]:
        """Start taking the lease on its own (once); return the future of it and the conditions."""
        if not self._started:
            self._started = True
            taking = asyncio.ensure_future(take_new_lease(self._kernel, self._id))
            taking.add_done_callback(retrieve)
            claiming = [_claim_alone(self._kernel, self._id, claim) for claim in self._claims]
            _chain(settle_new(self._kernel, self._id, taking, claiming), self._ready)
        return self._ready

    async def held(self) -> None:
        """Return once the lease is ours (taking it now if nobody asked yet); raise its failure."""
        writing = self._writing
        if writing is not None and not writing.done():
            await asyncio.wait((writing,))  # the first write is taking it: its outcome is the lease's
        await outlive(self.take_alone())

    async def settled(self) -> None:
        """Wait for a lease being taken and raise its failure; return at once when nobody asked
        for it (nothing was written, so nothing failed)."""
        if self._started:
            await outlive(self._ready)

    async def abandon(self) -> None:
        """Give back a lease being taken for a session that is not handed out after all."""
        if self._started:
            await release_when_taken(self._kernel, self._id, self._ready)

    async def create(self, record: SessionRecord, rows: Sequence[NewRow]) -> list[int]:
        """Store the session and its first rows (taking the lease with them when storage can).

        :raises StorageError: when a condition failed, the lease is held elsewhere, or storage
            refused the write.
        """
        storage: Any = self._kernel.storage
        if self._started:
            await outlive(self._ready)  # raises what taking the lease (or a condition) raised
            ids: list[int] = await storage.create_session(record, rows)
            return ids
        self._started = True
        writing = self._writing = asyncio.get_running_loop().create_future()
        owner = self._kernel.lease_owner
        try:
            if self._claims:
                ids = await storage.create_leased_session(record, rows, owner, LEASE_TTL_S, self._claims)
            else:
                ids = await storage.create_leased_session(record, rows, owner, LEASE_TTL_S)
        except BaseException as exc:
            # The write (or a claim in it) failed: nothing was written and no lease taken, as when a
            # lease cannot be taken. The session must write nothing, and a host answers as for
            # a failed open (the API: 500, or 503 ``storage_unavailable``), before any frame.
            _fail(self._ready, exc)
            raise
        else:
            self._ready.set_result(None)
        finally:
            writing.set_result(None)
        return ids


def _claim_alone(kernel: Kernel, session_id: str, claim: RecordClaim) -> Condition:
    """Start storing ``claim`` on its own (the lease is taken on its own too); return it as a
    condition of the first write: stored for its owner, or held by it already."""

    async def store() -> None:
        got = await kernel.records.space(claim.namespace).claim(claim.key, {}, owner=claim.owner)
        if not got.won and got.record.owner != claim.owner:
            raise StorageError(f"{claim.namespace}/{claim.key} is held by {got.record.owner}")

    started = asyncio.ensure_future(store())
    started.add_done_callback(retrieve)  # a failure is reported through the lease
    return (started, f"the new session {session_id} cannot store its claim", None)


async def take_lease(kernel: Kernel, session_id: str) -> str | None:
    """Take the writer lease; return None, or the live holder that keeps it."""
    storage = kernel.storage
    holder = await storage.acquire_lease(session_id, kernel.lease_owner, LEASE_TTL_S)
    if holder is not None and holder_is_gone(holder):
        # The holder was killed without releasing (kill -9, a crash): take over now instead of
        # making a restarted client wait for the lease to expire.
        log.info("taking over the lease of %s from %s, which is no longer running", session_id, holder)
        holder = await storage.acquire_lease(session_id, kernel.lease_owner, LEASE_TTL_S, take_over=holder)
    return holder


async def take_new_lease(kernel: Kernel, session_id: str) -> None:
    """Take a new id's writer lease; a holder (which nobody can be) fails the first write."""
    holder = await take_lease(kernel, session_id)
    if holder is not None:
        raise StorageError(f"the writer lease of the new session {session_id} is held by {holder}")


_GIVING_BACK: set[asyncio.Future[None]] = set()


def settle_new(
    kernel: Kernel,
    session_id: str,
    taking: asyncio.Future[None],
    also: Sequence[Condition],
) -> asyncio.Future[None]:
    """Return a future of a new session's lease (``taking``) and every one of ``also`` done; a
    condition that fails gives the lease back and fails it with a :class:`StorageError`, like a
    lease that cannot be taken.

    Done callbacks, not a task: this runs for every new session whose lease is taken on its own,
    and a task costs the loop a step of its own.
    """
    if not also:
        return taking
    ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    ready.add_done_callback(retrieve)
    waiting = len(also)

    def copy(done: asyncio.Future[None]) -> None:
        _chain_now(done, ready)

    def copy_failure(failure: BaseException) -> None:
        if not ready.done():
            ready.set_exception(failure)

    def condition_done(
        done: asyncio.Future[Any], what: str, check: Callable[[Any], BaseException | None] | None
    ) -> None:
        nonlocal waiting
        failure = _failure(done, check)
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
        giving_back = asyncio.ensure_future(release_when_taken(kernel, session_id, taking))
        _GIVING_BACK.add(giving_back)  # the loop keeps only a weak reference to a task
        giving_back.add_done_callback(_GIVING_BACK.discard)
        giving_back.add_done_callback(lambda _: copy_failure(StorageError(message)))

    for condition, what, check in also:
        condition.add_done_callback(functools.partial(condition_done, what=what, check=check))
    return ready


async def release_when_taken(kernel: Kernel, session_id: str, taking: asyncio.Future[None]) -> None:
    """Release a lease being taken for a session that was never handed out, once it is taken."""
    try:
        await asyncio.shield(taking)
    except BaseException:
        return  # not taken: nothing to release
    await kernel.storage.release_lease(session_id, kernel.lease_owner)


def _failure(
    done: asyncio.Future[Any], check: Callable[[Any], BaseException | None] | None
) -> BaseException | None:
    """Return the failure of a settled condition (its exception, or its check's), else None."""
    failure: BaseException | None = asyncio.CancelledError() if done.cancelled() else done.exception()
    if failure is None and check is not None:
        failure = check(done.result())
    return failure


def _chain(source: asyncio.Future[None], target: asyncio.Future[None]) -> None:
    """Settle ``target`` as ``source`` settles (now, when it already has)."""
    if source.done():
        _chain_now(source, target)
    else:
        source.add_done_callback(lambda done: _chain_now(done, target))


def _chain_now(done: asyncio.Future[None], target: asyncio.Future[None]) -> None:
    if target.done():
        return
    if done.cancelled():
        target.cancel()
    elif (failure := done.exception()) is not None:
        target.set_exception(failure)
    else:
        target.set_result(None)


def _fail(future: asyncio.Future[None], exc: BaseException) -> None:
    if not future.done():
        if isinstance(exc, asyncio.CancelledError):
            future.cancel()
        else:
            future.set_exception(exc)
