"""The authorization matrix (docs/reference/api-server.md#the-scope-table), generated, not listed:
every operation of the served OpenAPI document, every console action and every TUI gateway method
× every scope × {own tenant, other tenant}, on real servers over real HTTP and WebSocket.

The resources (a stored response, a finished run, a key) belong to tenant ``acme``; the caller
is a key with one scope of ``acme`` (own) or of ``globex`` (other). Each cell must be what the
table says: the scope missing → 403 ``insufficient_scope`` (4031 on the WebSocket); the scope
held → never 401/403, and an id of the other tenant → the 404 an unknown id gets.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hermes_core import ACCESS_SCOPES, access_scopes
from tests.api.api_helpers import Server, call
from tests.api.console.helpers import open_console
from tests.api.test_api_scoped_keys import http_key, wait_status_as
from tests.tui.client import RpcFailure, WsClient, WsServer, write_config

ADMIN = "hk_matrix-admin-key-0123456789abcdef"
PARAM = re.compile(r"\{(\w+)\}")
ID_PARAMS = {"response_id", "run_id", "key_id"}
#: Operations that use up their resource: each own-tenant cell gets fresh ones.
CONSUMING = {"deleteResponse", "cancelResponse", "stopRun", "revokeKey"}
BODIES: dict[str, Any] = {
    "createChatCompletion": {"messages": [{"role": "user", "content": "matrix"}]},
    "createResponse": {"input": "matrix"},
    "createRun": {"input": "matrix"},
    "steerRun": {"input": "matrix"},
    "respondRunApproval": {"choice": "deny"},
    "createKey": {"scopes": ["observe"]},
    "registerBrowserController": {},
}
CONSOLE_BODIES: dict[str, Any] = {
    "/runs": {"input": "matrix"},
    "/steer": {"input": "x"},
    "/approval": {"choice": "deny"},
}


def allows(held: str, required: str) -> bool:
    return required == access_scopes.PUBLIC or held == required or held == "admin"


class World:
    """One server, one key per (tenant, scope), and acme's resources."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.keys: dict[tuple[str, str], dict[str, Any]] = {}
        self.setup = ""

    async def build(self) -> None:
        for tenant in ("acme", "globex"):
            for scope in ACCESS_SCOPES:
                self.keys[(tenant, scope)] = await http_key(self.server, tenant, [scope], f"Bearer {ADMIN}")
        setup = await http_key(self.server, "acme", ["observe", "control"], f"Bearer {ADMIN}")
        self.setup = f"Bearer {setup['secret']}"

    async def resources(self) -> dict[str, str]:
        """Fresh acme resources: a stored response, a finished run, a key."""
        made = await call(
            self.server, "POST", "/v1/responses", {"input": "r", "store": True}, auth=self.setup
        )
        run = await call(self.server, "POST", "/v1/runs", {"input": "r"}, auth=self.setup)
        await wait_status_as(self.server, run.json["run_id"], self.setup)
        key = await http_key(self.server, "acme", ["observe"], f"Bearer {ADMIN}")
        return {
            "response_id": made.json["id"],
            "run_id": run.json["run_id"],
            "key_id": key["id"],
            "model": "hermes-agent",
        }


def fill(template: str, ids: dict[str, str]) -> str:
    """Put the resource ids into a route template."""
    return PARAM.sub(lambda m: ids[m.group(1)], template)


def operations(document: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(operationId, method, path template, scope) of every operation in the document."""
    return [
        (op["operationId"], method.upper(), path, op["x-hermes-scope"])
        for path, ops in document["paths"].items()
        for method, op in ops.items()
    ]


async def test_http_and_console_matrix(make_server: Any) -> None:
    server: Server = make_server(f'[api_server]\nconsole = true\nkey = "{ADMIN}"\n')
    server.key = ADMIN
    world = World(server)
    await world.build()
    document = (await call(server, "GET", "/openapi.json", auth=False)).json
    ops = operations(document)
    assert len(ops) == len(access_scopes.HTTP_ROUTES)
    shared = await world.resources()
    shared["model"] = (await call(server, "GET", "/v1/models")).json["data"][0]["id"]
    cells = 0
    failures: list[str] = []
    for op_id, method, template, required in ops:
        for scope in ACCESS_SCOPES:
            for side, tenant in (("own", "acme"), ("other", "globex")):
                ids = await world.resources() if op_id in CONSUMING and side == "own" else shared
                path = fill(template, ids)
                secret = world.keys[(tenant, scope)]["secret"]
                reply = await call(
                    server, method, path, BODIES.get(op_id), auth=f"Bearer {secret}", timeout=60
                )
                code = (
                    reply.json["error"]["code"] if reply.status >= 400 and reply.text.startswith("{") else ""
                )
                has_id = bool(ID_PARAMS & set(PARAM.findall(template)))
                cell = f"{method} {template} as {tenant}/{scope}: {reply.status} {code}"
                cells += 1
                if not allows(scope, required):
                    ok = reply.status == 403 and code == "insufficient_scope"
                elif side == "other" and has_id:
                    ok = reply.status == 404 and code.endswith("_not_found")
                else:
                    ok = reply.status not in (401, 403) and not code.endswith("_not_found")
                if not ok:
                    failures.append(cell)
    assert cells == len(ops) * len(ACCESS_SCOPES) * 2
    assert not failures, "cells that disagree with the scope table:\n" + "\n".join(failures)
    await _console_matrix(world, shared)


async def _console_matrix(world: World, shared: dict[str, str]) -> None:
    server = world.server
    failures: list[str] = []
    for (method, template), required in access_scopes.CONSOLE_ACTIONS.items():
        if required == access_scopes.PUBLIC:
            continue  # the page, its assets and the sign-in calls: covered by the console's own tests
        for scope in ACCESS_SCOPES:
            for side, tenant in (("own", "acme"), ("other", "globex")):
                console = open_console(server)
                try:
                    assert (await console.sign_in(world.keys[(tenant, scope)]["secret"])).status == 200
                    ids = await world.resources() if template.endswith("/stop") and side == "own" else shared
                    path = fill(template, ids)
                    body = next(
                        (
                            b
                            for suffix, b in CONSOLE_BODIES.items()
                            if template.endswith(suffix) and method == "POST"
                        ),
                        None,
                    )
                    reply = await console.request(method, path, body)
                finally:
                    await console.client.close()
                code = reply.json["error"]["code"] if reply.status >= 400 else ""
                has_id = "{run_id}" in template
                if not allows(scope, required):
                    ok = reply.status == 403 and code == "insufficient_scope"
                elif side == "other" and has_id:
                    ok = reply.status == 404 and code == "run_not_found"
                else:
                    ok = reply.status not in (401, 403) and not code.endswith("_not_found")
                if not ok:
                    failures.append(f"{method} {template} as {tenant}/{scope}: {reply.status} {code}")
    assert not failures, "console cells that disagree with the scope table:\n" + "\n".join(failures)


TUI_SKIP_CALLS = {"shell.exec", "cli.exec"}  # answered (they run commands): checked for scope only


@pytest.fixture
def tui_home(tmp_path: Path) -> Path:
    home = tmp_path / "tui"
    write_config(home)
    return home


def tui_allows(held: str, required: str, tenant: str) -> bool:
    """A TUI ``admin`` method changes the whole gateway: only the default tenant's admin holds it."""
    if required == "admin" and tenant != "default":
        return False
    return allows(held, required)


async def _tui_reply(client: WsClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    try:
        return {"result": await client.call(method, params)}
    except RpcFailure as exc:
        return {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}


def _as_unknown(reply: dict[str, Any], sid: str) -> str:
    """What must match an unknown id's reply: an error exactly (its id masked), a result as such."""
    return "result" if "result" in reply else json.dumps(reply).replace(sid, "<id>")


async def test_tui_websocket_matrix(tui_home: Path, tmp_path: Path) -> None:
    """Every TUI method × every scope × {own tenant, other tenant} on ``hermes tui --ws`` with
    stored keys, each call naming a stored session of ``acme``: the scope missing → 4031; held →
    never 4031/4032 for acme, and for ``globex`` exactly the answer an unknown id gets."""
    from hermes_tui_gateway.schema_doc import method_names
    from tests.api.test_api_scoped_keys import cli_key

    keys = {(t, scope): cli_key(tui_home, t, scope)[0] for t in ("acme", "globex") for scope in ACCESS_SCOPES}
    keys[("default", "admin")] = cli_key(tui_home, "default", "admin")[0]
    srv = WsServer(tui_home, "matrix-token-0123456789abcdef")
    failures: list[str] = []
    unknown_sid = "20260101_000000_abcdef"
    try:
        owner = await WsClient.connect(
            srv.url, headers={"Authorization": f"Bearer {keys[('acme', 'control')]}"}
        )
        try:
            await owner.wait(lambda: owner.frames)
            sid = (await owner.call("session.create", {}))["session_id"]
            await owner.call("prompt.submit", {"session_id": sid, "text": "matrix"})
            await owner.wait(lambda: owner.events(sid, "message.complete"), timeout=30)
        finally:
            await owner.close()
        # The other tenant first: its calls must leave acme's session as it is.
        cells = [
            (t, scope) for t in ("globex", "default", "acme") for scope in ACCESS_SCOPES if (t, scope) in keys
        ]
        for tenant, scope in cells:
            client = await WsClient.connect(
                srv.url, headers={"Authorization": f"Bearer {keys[(tenant, scope)]}"}
            )
            try:
                await client.wait(lambda c=client: c.frames)  # gateway.ready: every tenant is served
                for method in method_names():
                    required = access_scopes.method_scope(method)
                    assert required is not None
                    base: dict[str, Any] = {"command": "true"} if method in TUI_SKIP_CALLS else {}
                    reply = await _tui_reply(client, method, {**base, "session_id": sid})
                    got = reply["error"]["code"] if "error" in reply else 0
                    cell = f"{method} as {tenant}/{scope}: {got}"
                    if not tui_allows(scope, required, tenant):
                        if got != 4031:
                            failures.append(cell)
                    elif got in (4031, 4032):
                        failures.append(cell)
                    elif tenant != "acme" and method not in TUI_SKIP_CALLS:
                        unknown = await _tui_reply(client, method, {**base, "session_id": unknown_sid})
                        if _as_unknown(reply, sid) != _as_unknown(unknown, unknown_sid):
                            failures.append(f"{cell}: {reply} differs from an unknown id's {unknown}")
            finally:
                await client.close()
    finally:
        srv.stop()
    assert not failures, "TUI cells that disagree with the scope table:\n" + "\n".join(failures)
