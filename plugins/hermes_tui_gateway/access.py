"""Scoped keys on ``hermes tui --ws`` (docs/protocols/tui-gateway.md#1-starting-the-gateway,
docs/reference/tui-gateway.md#error-codes).

A WebSocket connection authenticates with the gateway's token (``admin`` of the ``default``
tenant) or with a stored key of any tenant (``hermes keys create``); it serves that tenant's
sessions only (:mod:`hermes_tui_gateway.tenancy`). Every request on it is checked against the
scope table (:mod:`hermes_core.access_scopes`): a method the key's scopes do not cover answers
4031, a method missing from the table 4032. The ``admin`` methods change the whole gateway
(its configuration, plugins, shell), so they need ``admin`` of the ``default`` tenant: another
tenant's ``admin`` key holds the other three scopes here. Stdio connections are the parent
process's own and are not checked.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from hermes_core import access_scopes, rpc, split_secret

if TYPE_CHECKING:
    from hermes_core import AccessKeys, Principal

log = logging.getLogger("hermes.tui")
ADMIN = "admin"

INSUFFICIENT_SCOPE = 4031
SCOPE_UNMAPPED = 4032
#: The principal of a connection made with the gateway's own token.
TOKEN_KEY_ID = "tui-gateway-token"
#: How often a stored key's connection checks that the key still exists.
REVOCATION_POLL_S = 0.5


def token_principal() -> Principal:
    """Return the principal of the gateway token: ``admin`` of ``default``."""
    from hermes_core import legacy_principal

    return legacy_principal(TOKEN_KEY_ID)


def check_method(who: Principal, method: str) -> None:
    """Refuse a request the key may not make.

    :raises rpc.RpcError: 4032 for a method not in the scope table, 4031 for a missing scope.
    """
    scope = access_scopes.method_scope(method)
    if scope is None:
        raise rpc.RpcError(
            SCOPE_UNMAPPED, f"{method} is not in the scope table; it is refused", data={"method": method}
        )
    if scope == ADMIN and who.allows(scope) and not who.operator:
        raise rpc.RpcError(
            INSUFFICIENT_SCOPE,
            f"{method} changes the whole gateway: it needs the 'admin' scope of the default tenant",
            data={"method": method, "required_scope": scope},
        )
    if not who.allows(scope):
        raise rpc.RpcError(
            INSUFFICIENT_SCOPE,
            f"this key lacks the {scope!r} scope that {method} needs",
            data={"method": method, "required_scope": scope},
        )


async def authenticate(keys: AccessKeys | None, offered: str, token: str) -> Principal | None:
    """Return the principal of an offered credential: the gateway token, or a stored key."""
    if hmac.compare_digest(offered.encode("utf-8"), token.encode("utf-8")):
        return token_principal()
    if keys is None or split_secret(offered) is None:
        return None
    try:
        return await keys.authenticate(offered)
    except Exception:  # storage down or without records: the key cannot be checked, so refuse
        log.warning("tui: could not check a stored key", exc_info=True)
        return None


async def watch_revocation(keys: AccessKeys, who: Principal, close: Callable[[], Awaitable[object]]) -> None:
    """Close a stored key's connection once the key is revoked or expires (checked every
    ``REVOCATION_POLL_S``, so within a second)."""
    while True:
        await asyncio.sleep(REVOCATION_POLL_S)
        try:
            live = await keys.principal_of_id(who.key_id)
        except Exception:
            continue  # storage blip: keep the connection, look again
        if live is None:
            await close()
            return
