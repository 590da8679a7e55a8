"""Which tenant a session belongs to (docs/reference/api-server.md#tenants), for every transport.

A session a tenant's stored key makes (over the API or ``hermes tui --ws``), and every child
session a delegation of it makes (:meth:`SessionTenants.inherit`), is claimed for the
tenant's owner label (``tenant:<name>``, :attr:`Principal.owner`) in the records namespace
``api.session_owners``, atomically, so every instance that shares the storage agrees. A session
with no claim, or one claimed by a configured key (``principal:…``), belongs to the ``default``
tenant. Owners never change, so they are cached once read.

Two rules read this table:

- :meth:`SessionTenants.check` (the API): the first stored key to name an id claims it; a
  configured key may open any session but another tenant's; a stored key may open only what its
  tenant claimed.
- :meth:`SessionTenants.sees` (the TUI gateway over WebSocket): a connection sees the sessions of
  its own tenant: ``tenant:<name>`` claims for a named tenant, unclaimed and ``default`` ones for
  the ``default`` tenant.

A refused or unseen id is answered exactly like an unknown one by the transport.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from hermes_core.access_keys import DEFAULT_TENANT
from hermes_core.record_store import Expect
from hermes_core.storage import RecordClaim

if TYPE_CHECKING:
    from hermes_core.access_keys import Principal
    from hermes_core.record_space import Records

NAMESPACE = "api.session_owners"
_LEGACY = "principal:"
_TENANT = "tenant:"
_CACHE_MAX = 100_000
#: How many owner reads run at once when a listing is filtered.
_READS_AT_ONCE = 16


def tenant_of(holder: str | None) -> str:
    """Return the tenant an owner label belongs to: ``tenant:<name>`` → name, else ``default``."""
    if holder is not None and holder.startswith(_TENANT):
        return holder[len(_TENANT) :]
    return DEFAULT_TENANT


def _compatible(holder: str, owner: str) -> bool:
    return holder == owner or (holder.startswith(_LEGACY) and owner.startswith(_LEGACY))


class SessionTenants:
    """The owner of every claimed session, read through a cache.

    :param records: the kernel's records (``kernel.records``).
    """

    def __init__(self, records: Records) -> None:
        self._space = records.space(NAMESPACE)
        self._known: dict[str, str | None] = {}

    @staticmethod
    def claims(who: Principal | None) -> bool:
        """Tell whether sessions made by ``who`` are claimed for its tenant: a stored key's are; a
        configured key's, the gateway token's and the local process's are the ``default``
        tenant's without a record (as before tenants existed)."""
        return who is not None and who.owner.startswith(_TENANT)

    def _remember(self, session_id: str, holder: str | None) -> None:
        if len(self._known) >= _CACHE_MAX:
            self._known.clear()
        self._known[session_id] = holder

    async def holder(self, session_id: str, *, exists: bool = False) -> str | None:
        """Return the owner label ``session_id`` is claimed for, or None when unclaimed.

        :param exists: the session is known to exist (stored, or live here). Such a session
            without a claim is never claimed later (a stored key may not claim an existing
            session; a new one is claimed as it is made), so that answer is cached too; for an
            id that may not exist yet it is not, since a tenant may still make it.
        """
        if session_id in self._known:
            return self._known[session_id]
        record = await self._space.get(session_id)
        holder = record.owner if record is not None and record.owner else None
        if holder is not None or exists:
            self._remember(session_id, holder)
        return holder

    async def check(
        self, session_id: str, owner: str, exists: Callable[[str], Awaitable[bool]], *, new: bool = False
    ) -> bool:
        """Claim ``session_id`` for ``owner`` or tell whether it may open it (the API's rule).

        :param owner: the caller's :attr:`Principal.owner`.
        :param exists: whether a session is stored already (a stored key may not claim it then).
        :param new: the id was made for this request (64 random bits), so no record and no stored
            session can name it: a configured key reads nothing, a tenant only claims it.
        :returns: False for a session the caller may not open (answer it as unknown).
        """
        holder = self._known.get(session_id)
        if holder is None and owner.startswith(_LEGACY) and new:
            holder = owner
        elif holder is None and owner.startswith(_LEGACY):
            # A configured key only has to stay out of tenants' sessions: one read, no write. A
            # session it opens without a record exists from then on, so no tenant can claim it.
            record = await self._space.get(session_id)
            holder = record.owner if record is not None and record.owner else owner
        if holder is None:
            # One round trip: the claim takes an unowned id, or answers with its holder.
            claim = await self._space.claim(session_id, {}, owner=owner)
            holder = claim.record.owner or owner
            # The session was there before anyone claimed it: not this tenant's. (An id made for
            # this request names no stored session: nothing to ask.)
            if claim.won and not owner.startswith(_LEGACY) and not new and await exists(session_id):
                await self._space.delete(session_id, expect=Expect(owner=owner))
                return False
        self._remember(session_id, holder)
        return _compatible(holder, owner)

    async def claim_new(self, session_id: str, who: Principal | None) -> None:
        """Claim a session ``who`` just made (nothing for a caller that :func:`claims` nothing)."""
        if not self.claims(who):
            return
        assert who is not None
        claim = await self._space.claim(session_id, {}, owner=who.owner)
        self._remember(session_id, claim.record.owner or who.owner)

    def new_claim(self, session_id: str, owner: str) -> RecordClaim | None:
        """Return the claim of an id made for this request for ``owner``, for the new session's
        first write to store with it (``claims`` of :meth:`Sessions.open`): what :meth:`check`
        with ``new`` does, in the same transaction, with no write on the way to the first model
        call; None for a configured key's owner, which claims nothing.

        Nobody else can know such an id, so nothing is read first, and nothing can use the id
        before that write (or the lease taken for the id's reveal, which stores the claim
        beside it). The cache learns the owner on the first read of it.
        """
        if owner.startswith(_LEGACY):
            return None
        return RecordClaim(NAMESPACE, session_id, owner)

    async def inherit(self, child_id: str, parent_id: str) -> None:
        """Claim a session a delegation just made (``child_id``) for the owner of the session that
        delegated (``parent_id``), so a child belongs to its root session's tenant. Nothing for a
        parent no one claimed (a ``default`` tenant's child needs no record)."""
        holder = await self.holder(parent_id, exists=True)
        if holder is None:
            return
        claim = await self._space.claim(child_id, {}, owner=holder)
        self._remember(child_id, claim.record.owner or holder)

    async def tenant(self, session_id: str) -> str:
        """Return the tenant an existing session belongs to (``default`` when unclaimed)."""
        return tenant_of(await self.holder(session_id, exists=True))

    async def sees(self, session_id: str, tenant: str, *, exists: bool = True) -> bool:
        """Tell whether a session belongs to ``tenant`` (the TUI gateway's rule).

        :param exists: the session is known to exist (see :meth:`holder`).
        """
        return tenant_of(await self.holder(session_id, exists=exists)) == tenant

    async def seen(self, session_ids: Iterable[str], tenant: str, *, exists: bool = True) -> set[str]:
        """Return those of ``session_ids`` that belong to ``tenant`` (a few reads at a time).

        :param exists: the sessions are known to exist (see :meth:`holder`).
        """
        ids = list(dict.fromkeys(session_ids))
        gate = asyncio.Semaphore(_READS_AT_ONCE)

        async def one(sid: str) -> bool:
            async with gate:
                return await self.sees(sid, tenant, exists=exists)

        found = await asyncio.gather(*(one(sid) for sid in ids))
        return {sid for sid, ok in zip(ids, found, strict=True) if ok}
