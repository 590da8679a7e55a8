"""Which tenant a session named by id belongs to (docs/reference/api-server.md#tenants).

A caller may name a session (``X-Hermes-Session-Id``, a run's ``session_id``). The first stored
key to open a session through the API claims it for its tenant in ``api.session_owners``
(atomically, so two instances agree); afterwards only that tenant may open it. Configured and
generated keys keep sharing one another's sessions, as before tenants existed, and record
nothing; a stored key's tenant may not open a session it did not make (nor one that exists
without an owner: made by a configured key, the TUI or the CLI).
A refused id answers 404 ``session_not_found``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from hermes_api_server.errors import ApiError
from hermes_core import Expect

if TYPE_CHECKING:
    from hermes_core import Records

NAMESPACE = "api.session_owners"
_LEGACY = "principal:"
_CACHE_MAX = 100_000


def not_found(session_id: str) -> ApiError:
    return ApiError(404, "session_not_found", f"No session {session_id!r}", param="session_id")


def _compatible(holder: str, owner: str) -> bool:
    return holder == owner or (holder.startswith(_LEGACY) and owner.startswith(_LEGACY))


class SessionOwners:
    """The owner of every session the API opened; owners never change, so they are cached."""

    def __init__(self, records: Records) -> None:
        self._space = records.space(NAMESPACE)
        self._known: dict[str, str] = {}

    async def check(
        self, session_id: str, owner: str, exists: Callable[[str], Awaitable[bool]], *, new: bool = False
    ) -> None:
        """Claim ``session_id`` for ``owner`` or check that it may open it.

        :param new: the id was made for this request (``api-`` + 64 random bits), so no record
            can name it: a configured key reads nothing (a tenant still claims it).
        :raises ApiError: 404 ``session_not_found`` for another tenant's session.
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
            if claim.won and not owner.startswith(_LEGACY) and await exists(session_id):
                # The session was there before anyone claimed it: not this tenant's.
                await self._space.delete(session_id, expect=Expect(owner=owner))
                raise not_found(session_id)
        if len(self._known) >= _CACHE_MAX:
            self._known.clear()
        self._known[session_id] = holder
        if not _compatible(holder, owner):
            raise not_found(session_id)
