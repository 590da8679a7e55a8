"""The scope table covers every surface (docs/reference/api-server.md#the-scope-table): every
route of the aiohttp router (console included), every operation of the OpenAPI document and every
TUI gateway method has exactly one scope; nothing in the table is stale; and a route missing from
the table is refused with 403 ``scope_unmapped`` even for an admin key, on a real socket."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from hermes_api_server.app import build_app
from hermes_api_server.keys import KeyRing
from hermes_api_server.openapi_doc import build_document
from hermes_api_server.settings import ApiSettings
from hermes_core import ACCESS_SCOPES, access_scopes
from hermes_core.redaction import Redactor
from hermes_tui_gateway.schema_doc import method_names

ALLOWED = {*ACCESS_SCOPES, access_scopes.PUBLIC}
KEY = "hk_scope-table-test-key-0123456789"


def _state() -> Any:
    settings = ApiSettings.model_validate({"console": True, "keys": [KEY]})
    return SimpleNamespace(
        settings=settings,
        keyring=KeyRing((KEY.encode(),), "configured"),
        access_keys=None,
        kernel=SimpleNamespace(redactor=Redactor()),
        store=None,
        last_request_at=None,
    )


def _routes(app: web.Application) -> set[tuple[str, str]]:
    return {
        (route.method, route.resource.canonical)
        for route in app.router.routes()
        if route.method != "HEAD" and route.resource is not None
    }


def test_every_router_route_and_console_action_has_a_scope() -> None:
    app = build_app(_state())
    routes = _routes(app)
    assert ("POST", "/console/api/runs") in routes and ("DELETE", "/v1/keys/{key_id}") in routes
    missing = sorted(r for r in routes if access_scopes.route_scope(*r) is None)
    assert not missing, f"routes without a scope (add them to hermes_core/access_scopes.py): {missing}"
    assert all(access_scopes.route_scope(*r) in ALLOWED for r in routes)
    console = {r for r in routes if r[1].startswith("/console")}
    assert console == set(access_scopes.CONSOLE_ACTIONS), "the console's actions and the table differ"
    stale = set(access_scopes.HTTP_ROUTES) - routes
    assert not stale, f"table entries for routes that do not exist: {sorted(stale)}"


def test_every_openapi_operation_has_its_scope_stamped() -> None:
    doc = build_document()
    seen = 0
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            scope = access_scopes.route_scope(method.upper(), path)
            assert scope is not None, f"{method.upper()} {path} is not in the scope table"
            assert op["x-hermes-scope"] == scope
            assert (op.get("security") == []) == (scope == access_scopes.PUBLIC), path
            seen += 1
    assert seen == len(access_scopes.HTTP_ROUTES)


def test_every_tui_method_has_a_scope_and_nothing_is_stale() -> None:
    methods = set(method_names())
    missing = sorted(m for m in methods if access_scopes.method_scope(m) is None)
    assert not missing, f"TUI methods without a scope: {missing}"
    assert set(access_scopes.TUI_METHODS) == methods
    assert set(access_scopes.TUI_METHODS.values()) <= set(ACCESS_SCOPES)


async def test_a_route_missing_from_the_table_is_refused_for_every_key() -> None:
    app = build_app(_state())

    async def hidden(request: web.Request) -> web.Response:
        return web.json_response({"reached": True})

    app.router.add_get("/v1/not-in-the-table", hidden)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as client:
            url = str(server.make_url("/v1/not-in-the-table"))
            async with client.get(url, headers={"Authorization": f"Bearer {KEY}"}) as resp:
                body = await resp.json()
                assert resp.status == 403 and body["error"]["code"] == "scope_unmapped", body
            async with client.get(url) as resp:
                assert resp.status == 401  # the key is asked for first, as on every route
    finally:
        await server.close()


def _documented() -> tuple[dict[tuple[str, str], str], dict[str, str]]:
    """Read the scope tables of docs/reference/api-server.md#the-scope-table."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs/reference/api-server.md").read_text()
    section = page.split("### The scope table", 1)[1].split("\n### ", 1)[0]
    routes: dict[tuple[str, str], str] = {}
    methods: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not line.startswith("|"):
            continue
        left, right = cells
        for method, path in re.findall(r"`(GET|POST|DELETE) (/[^`]*)`", left):
            routes[(method, path)] = right.split()[0]
        if left in ACCESS_SCOPES:
            for name in re.findall(r"`([a-z_.]+)`", right):
                methods[name] = left
    return routes, methods


def test_the_documented_scope_table_is_the_code_table() -> None:
    """A scope changed in the code shows in the docs' table (and in review), or this fails."""
    routes, methods = _documented()
    code_routes = {
        k: v
        for k, v in {**access_scopes.HTTP_ROUTES, **access_scopes.CONSOLE_ACTIONS}.items()
        if v != access_scopes.PUBLIC
    }
    documented = {k: v for k, v in routes.items() if v != "public"}
    assert documented == code_routes
    public = {k for k, v in access_scopes.HTTP_ROUTES.items() if v == access_scopes.PUBLIC}
    assert public <= {k for k, v in routes.items() if v == "public"}
    assert methods == access_scopes.TUI_METHODS
