"""``/v1/keys``: list, create and revoke scoped keys over HTTP, ``admin`` only
(docs/reference/api-server.md#managing-keys).

An admin of the ``default`` tenant (every configured or generated key) manages the keys of every
tenant; an admin key of another tenant only its own tenant's: another tenant's key id answers
404 like an unknown one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from hermes_api_server.errors import ApiError, invalid, json_response
from hermes_api_server.http_util import read_json
from hermes_api_server.state import caller, get_state
from hermes_core import DEFAULT_TENANT, InvalidValue, check_tenant, parse_duration

if TYPE_CHECKING:
    from hermes_core import AccessKeys, Principal


def _keys(request: web.Request) -> tuple[AccessKeys, Principal]:
    keys = get_state(request).access_keys
    who = caller(request)
    if keys is None or who is None:  # the middleware authenticated the caller already
        raise ApiError(503, "storage_unavailable", "Key storage is not available")
    return keys, who


async def list_keys(request: web.Request) -> web.Response:
    """List the caller's tenant's keys (every tenant's for an operator; ``?tenant=`` narrows)."""
    keys, who = _keys(request)
    tenant = request.query.get("tenant") if who.operator else who.tenant
    if tenant:
        try:
            check_tenant(tenant)
        except InvalidValue as exc:
            raise invalid(str(exc), "tenant") from None
    found = await keys.list(tenant or None)
    return json_response({"object": "list", "data": [dict(k.as_dict(), object="hermes.key") for k in found]})


async def create_key(request: web.Request) -> web.Response:
    """Make a key; the answer carries the secret, which is never shown again."""
    keys, who = _keys(request)
    body = await read_json(request)
    tenant = body.get("tenant", who.tenant if not who.operator else DEFAULT_TENANT)
    if not who.operator and tenant != who.tenant:
        raise ApiError(
            403, "insufficient_scope", "An admin key manages its own tenant's keys only", param="tenant"
        )
    scopes = body.get("scopes")
    if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
        raise invalid("scopes must be a list of scope names", "scopes")
    expires_in = body.get("expires_in")
    try:
        ttl_s = parse_duration(str(expires_in)) if expires_in is not None else None
        secret, info = await keys.create(tenant, scopes, ttl_s)
    except InvalidValue as exc:
        field = "expires_in" if exc.field == "expires" else exc.field
        raise invalid(str(exc), field) from None
    get_state(request).kernel.redactor.add(secret)
    return json_response(dict(info.as_dict(), object="hermes.key", secret=secret), status=201)


async def revoke_key(request: web.Request) -> web.Response:
    """Revoke a key: every instance sharing the records refuses it within a second."""
    keys, who = _keys(request)
    key_id = request.match_info["key_id"]
    if not await keys.revoke(key_id, None if who.operator else who.tenant):
        raise ApiError(404, "key_not_found", f"No key {key_id!r}", param="key_id")
    return json_response({"object": "hermes.key", "id": key_id, "deleted": True})
