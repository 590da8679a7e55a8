"""Who is calling and may they: bearer keys to a :class:`hermes_core.Principal`, and the scope
table's verdict for a route (docs/reference/api-server.md#scoped-keys, #the-scope-table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_api_server.errors import ApiError
from hermes_api_server.keys import bearer_token
from hermes_core import access_scopes, legacy_principal

if TYPE_CHECKING:
    from hermes_api_server.state import ServerState
    from hermes_core import Principal


async def authenticate(state: ServerState, header: str | None) -> Principal | None:
    """Return the caller of an ``Authorization`` header, else None.

    A configured or generated key is ``admin`` of the ``default`` tenant; any other bearer is
    looked up among the stored keys (``hks_…``), so a revoked or expired one is refused.
    """
    legacy = state.keyring.principal_for(header)
    if legacy is not None:
        return legacy_principal(legacy)
    token = bearer_token(header)
    if token is None or state.access_keys is None:
        return None
    return await state.access_keys.authenticate(token)


def unmapped(method: str, template: str) -> ApiError:
    """The 403 of a route that is not in the scope table (refused whatever the key)."""
    return ApiError(
        403, "scope_unmapped", f"{method} {template} is not in the scope table; it is refused for every key"
    )


def check_scope(who: Principal, scope: str | None, method: str, template: str) -> None:
    """Refuse a caller whose key lacks ``scope`` (None: the route is not in the table).

    :raises ApiError: 403 ``scope_unmapped`` or 403 ``insufficient_scope``.
    """
    if scope is None:
        raise unmapped(method, template)
    if scope != access_scopes.PUBLIC and not who.allows(scope):
        raise ApiError(
            403,
            "insufficient_scope",
            f"This key lacks the {scope!r} scope that {method} {template} needs",
            extra={"required_scope": scope},
        )
