"""Which tenant a session named by id belongs to (docs/reference/api-server.md#tenants).

A caller may name a session (``X-Hermes-Session-Id``, a run's ``session_id``). The first stored
key to open a session through the API claims it for its tenant; afterwards only that tenant may
open it. Configured and generated keys keep sharing one another's sessions, as before tenants
existed, and record nothing; a stored key's tenant may not open a session it did not make (nor
one that exists without an owner: made by a configured key, the TUI or the CLI). The table and
its rules are the kernel's (:class:`hermes_core.SessionTenants`), shared with the TUI gateway.
A refused id answers 404 ``session_not_found``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from hermes_api_server.errors import ApiError
from hermes_core import SessionTenants

if TYPE_CHECKING:
    from hermes_core import RecordClaim, Records


def not_found(session_id: str) -> ApiError:
    return ApiError(404, "session_not_found", f"No session {session_id!r}", param="session_id")


class SessionOwners:
    """The API's view of the kernel's session tenants: a refusal is a 404."""

    def __init__(self, records: Records) -> None:
        self.tenants = SessionTenants(records)

    async def check(
        self, session_id: str, owner: str, exists: Callable[[str], Awaitable[bool]], *, new: bool = False
    ) -> None:
        """Claim ``session_id`` for ``owner`` or check that it may open it.

        :param new: the id was made for this request (``api-`` + 64 random bits), so no record
            can name it: a configured key reads nothing (a tenant still claims it).
        :raises ApiError: 404 ``session_not_found`` for another tenant's session.
        """
        if not await self.tenants.check(session_id, owner, exists, new=new):
            raise not_found(session_id)

    def claim_new(self, session_id: str, owner: str) -> RecordClaim | None:
        """Return the claim of an id made for this request for ``owner`` (None: a configured key
        claims nothing), stored in the new session's first write, which the reveal of its id
        waits for (docs/reference/api-server.md#tenants)."""
        return self.tenants.new_claim(session_id, owner)
