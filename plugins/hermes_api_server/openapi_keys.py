"""The OpenAPI entries of ``/v1/keys`` and the ``x-hermes-scope`` of every operation
(docs/reference/api-server.md#managing-keys, #the-scope-table)."""

from __future__ import annotations

from typing import Any

from hermes_core import ACCESS_SCOPES, access_scopes

_KEY_PROPS: dict[str, Any] = {
    "object": {"const": "hermes.key"},
    "id": {"type": "string"},
    "tenant": {"type": "string"},
    "scopes": {"type": "array", "items": {"enum": list(ACCESS_SCOPES)}},
    "created_at": {"type": "number"},
    "expires_at": {"type": ["number", "null"]},
}
KEY: dict[str, Any] = {"type": "object", "required": list(_KEY_PROPS), "properties": _KEY_PROPS}
NEW_KEY: dict[str, Any] = {
    "type": "object",
    "required": [*_KEY_PROPS, "secret"],
    "properties": {**_KEY_PROPS, "secret": {"type": "string", "description": "Shown once"}},
}
CREATE: dict[str, Any] = {
    "type": "object",
    "required": ["scopes"],
    "properties": {
        "tenant": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_.\\-]{0,63}$"},
        "scopes": {"type": "array", "minItems": 1, "items": {"enum": list(ACCESS_SCOPES)}},
        "expires_in": {"type": "string", "description": "30d, 12h, 45m, 90s or 2w"},
    },
}


def _resp(status: str) -> dict[str, str]:
    return {"$ref": f"#/components/responses/E{status}"}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def key_paths() -> dict[str, Any]:
    """Return the ``paths`` entries of the key management routes."""
    errors = {s: _resp(s) for s in ("400", "401", "403", "404", "500", "503")}
    listing = {
        "type": "object",
        "properties": {"object": {"const": "list"}, "data": {"type": "array", "items": KEY}},
    }
    gone = {
        "type": "object",
        "properties": {
            "object": {"const": "hermes.key"},
            "id": {"type": "string"},
            "deleted": {"const": True},
        },
    }
    return {
        "/v1/keys": {
            "get": {
                "operationId": "listKeys",
                "summary": "List scoped keys (never their secrets)",
                "parameters": [
                    {"name": "tenant", "in": "query", "required": False, "schema": {"type": "string"}}
                ],
                "responses": {"200": _json(listing), **errors},
            },
            "post": {
                "operationId": "createKey",
                "summary": "Create a scoped key; the secret is in this answer only",
                "requestBody": {"required": True, "content": {"application/json": {"schema": CREATE}}},
                "responses": {"201": _json(NEW_KEY, "Created"), **errors},
            },
        },
        "/v1/keys/{key_id}": {
            "delete": {
                "operationId": "revokeKey",
                "summary": "Revoke a scoped key",
                "parameters": [
                    {"name": "key_id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {"200": _json(gone), **errors},
            }
        },
    }


def stamp_scopes(paths: dict[str, Any]) -> None:
    """Write each operation's scope from the scope table into ``x-hermes-scope``."""
    for path, ops in paths.items():
        for method, op in ops.items():
            scope = access_scopes.route_scope(method.upper(), path)
            if scope is not None:
                op["x-hermes-scope"] = scope
