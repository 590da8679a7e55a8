"""Scoped, tenant-bound keys on a real ``hermes api``: the CLI makes them in the server's storage,
each route asks for its scope, key management is admin-only, a tenant's ids are unknown to
another tenant (docs/reference/api-server.md#scoped-keys, #tenants)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.api.api_helpers import HERMES, Server, assert_error, call, clean_env
from tests.api.test_api_runs import wait_status
from tests.timing import eventually


def hermes_keys(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``hermes keys ARGS`` against the storage of ``home``."""
    return subprocess.run(
        [HERMES, "keys", *args], env=clean_env(home, env), capture_output=True, text=True, timeout=60
    )


def cli_key(home: Path, tenant: str, scopes: str, env: dict[str, str] | None = None) -> tuple[str, str]:
    """Create a key with the CLI; return (secret, id)."""
    done = hermes_keys(home, "create", "--tenant", tenant, "--scope", scopes, env=env)
    assert done.returncode == 0, done.stderr
    secret = done.stdout.strip()
    assert secret.startswith("hks_") and "\n" not in secret
    return secret, secret[4:16]


async def http_key(server: Server, tenant: str, scopes: list[str], auth: str | None = None) -> dict[str, Any]:
    reply = await call(
        server, "POST", "/v1/keys", {"tenant": tenant, "scopes": scopes}, auth=auth or f"Bearer {server.key}"
    )
    assert reply.status == 201, reply.text
    return dict(reply.json)


async def test_cli_keys_scopes_and_revocation(make_server: Any) -> None:
    srv: Server = make_server()
    secret, key_id = cli_key(srv.home, "acme", "observe,approve")
    listed = hermes_keys(srv.home, "list")
    assert key_id in listed.stdout and "acme" in listed.stdout and "observe,approve" in listed.stdout
    assert secret not in listed.stdout + listed.stderr and secret[17:] not in listed.stdout
    bearer = f"Bearer {secret}"
    assert (await call(srv, "GET", "/v1/runs", auth=bearer)).status == 200
    assert (await call(srv, "GET", "/v1/models", auth=bearer)).status == 200
    refused = assert_error(
        await call(srv, "POST", "/v1/runs", {"input": "hi"}, auth=bearer), 403, "insufficient_scope"
    )
    assert refused["required_scope"] == "control"
    assert_error(
        await call(
            srv, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}, auth=bearer
        ),
        403,
        "insufficient_scope",
    )
    # The legacy (generated) key is admin of the default tenant: it still does everything.
    assert (await call(srv, "POST", "/v1/runs", {"input": "hi"})).status == 202
    assert hermes_keys(srv.home, "revoke", key_id).returncode == 0
    await eventually(lambda: _status(srv, bearer), what="the revoked key refused", timeout=5)
    assert "no keys" in hermes_keys(srv.home, "list").stdout
    assert hermes_keys(srv.home, "revoke", key_id).returncode == 1
    bad = hermes_keys(srv.home, "create", "--scope", "observe,root")
    assert bad.returncode == 2 and "root" in bad.stderr


async def _status(srv: Server, bearer: str) -> bool:
    return (await call(srv, "GET", "/v1/runs", auth=bearer)).status == 401


async def test_only_admin_keys_manage_keys(make_server: Any) -> None:
    """A key without ``admin`` (even with every other scope) can neither create, list nor revoke
    keys; an admin key of a tenant manages that tenant's keys only."""
    srv: Server = make_server()
    strong = await http_key(srv, "acme", ["observe", "control", "approve"])
    bearer = f"Bearer {strong['secret']}"
    for method, path, body in (
        ("POST", "/v1/keys", {"tenant": "acme", "scopes": ["admin"]}),
        ("POST", "/v1/keys", {"scopes": ["observe"]}),
        ("GET", "/v1/keys", None),
        ("DELETE", f"/v1/keys/{strong['id']}", None),
    ):
        err = assert_error(await call(srv, method, path, body, auth=bearer), 403, "insufficient_scope")
        assert err["required_scope"] == "admin"
    listed = (await call(srv, "GET", "/v1/keys")).json["data"]
    assert [k["id"] for k in listed] == [strong["id"]]
    assert all("secret" not in k and "hash" not in k for k in listed)
    # A tenant's admin: its own tenant only; another tenant's key id is unknown to it.
    acme_admin = await http_key(srv, "acme", ["admin"])
    other = await http_key(srv, "globex", ["observe"])
    admin = f"Bearer {acme_admin['secret']}"
    assert {k["tenant"] for k in (await call(srv, "GET", "/v1/keys", auth=admin)).json["data"]} == {"acme"}
    assert_error(
        await call(srv, "POST", "/v1/keys", {"tenant": "globex", "scopes": ["admin"]}, auth=admin),
        403,
        "insufficient_scope",
    )
    foreign = await call(srv, "DELETE", f"/v1/keys/{other['id']}", auth=admin)
    unknown = await call(srv, "DELETE", "/v1/keys/000000000000", auth=admin)
    assert_error(foreign, 404, "key_not_found")
    assert foreign.text.replace(other["id"], "X") == unknown.text.replace("000000000000", "X")
    assert (await call(srv, "GET", "/v1/runs", auth=f"Bearer {other['secret']}")).status == 200
    made = await call(srv, "POST", "/v1/keys", {"scopes": ["observe"], "expires_in": "1h"}, auth=admin)
    assert made.status == 201 and made.json["tenant"] == "acme" and made.json["expires_at"] is not None
    assert_error(
        await call(srv, "POST", "/v1/keys", {"scopes": ["observe"], "expires_in": "soon"}, auth=admin),
        400,
        "invalid_value",
    )
    assert_error(await call(srv, "POST", "/v1/keys", {"scopes": ["root"]}, auth=admin), 400, "invalid_value")


async def test_another_tenants_ids_answer_like_unknown_ids(make_server: Any) -> None:
    """acme's response, run and session ids are unknown to globex: byte for byte the 404 a server
    that never saw them gives (a second, empty server answers for "unknown")."""
    srv: Server = make_server()
    empty: Server = make_server()
    acme = f"Bearer {(await http_key(srv, 'acme', ['observe', 'control', 'approve']))['secret']}"
    acme2 = f"Bearer {(await http_key(srv, 'acme', ['observe']))['secret']}"
    globex = f"Bearer {(await http_key(srv, 'globex', ['observe', 'control', 'approve']))['secret']}"
    created = await call(srv, "POST", "/v1/responses", {"input": "secret plans", "store": True}, auth=acme)
    rid = created.json["id"]
    run = await call(srv, "POST", "/v1/runs", {"input": "more plans"}, auth=acme)
    run_id, session_id = run.json["run_id"], run.json["session_id"]
    assert (await call(srv, "GET", f"/v1/runs/{run_id}", auth=acme2)).status == 200  # same tenant
    assert (await call(srv, "GET", f"/v1/responses/{rid}", auth=acme2)).status == 200
    await wait_status_as(srv, run_id, acme)
    probes = [
        ("GET", f"/v1/responses/{rid}", None),
        ("GET", f"/v1/responses/{rid}/input_items", None),
        ("POST", f"/v1/responses/{rid}/cancel", None),
        ("DELETE", f"/v1/responses/{rid}", None),
        ("POST", "/v1/responses", {"input": "x", "previous_response_id": rid}),
        ("GET", f"/v1/runs/{run_id}", None),
        ("GET", f"/v1/runs/{run_id}/events", None),
        ("POST", f"/v1/runs/{run_id}/stop", None),
        ("POST", f"/v1/runs/{run_id}/steer", {"input": "x"}),
        ("POST", f"/v1/runs/{run_id}/approval", {"choice": "deny"}),
    ]
    for method, path, body in probes:
        foreign = await call(srv, method, path, body, auth=globex)
        unknown = await call(empty, method, path, body)
        assert foreign.status == 404, (path, foreign.text)
        assert foreign.text.encode() == unknown.text.encode(), (method, path, foreign.text, unknown.text)
    listed = (await call(srv, "GET", "/v1/runs", auth=globex)).json["data"]
    assert run_id not in {r["run_id"] for r in listed}
    assert run_id in {r["run_id"] for r in (await call(srv, "GET", "/v1/runs", auth=acme2)).json["data"]}
    # A session acme made cannot be continued by globex (an unknown id would be created instead).
    taken = await call(srv, "POST", "/v1/runs", {"input": "peek", "session_id": session_id}, auth=globex)
    assert_error(taken, 404, "session_not_found")
    chat = {"messages": [{"role": "user", "content": "what did I say?"}]}
    taken = await call(
        srv, "POST", "/v1/chat/completions", chat, auth=globex, headers={"X-Hermes-Session-Id": session_id}
    )
    assert_error(taken, 404, "session_not_found")
    # Configured keys and tenants stay out of each other's sessions too.
    legacy = await call(srv, "POST", "/v1/runs", {"input": "peek", "session_id": session_id})
    assert_error(legacy, 404, "session_not_found")
    mine = await call(srv, "POST", "/v1/runs", {"input": "mine", "session_id": "legacy-session-1"})
    assert mine.status == 202, mine.text
    await wait_status_as(srv, mine.json["run_id"], f"Bearer {srv.key}")
    taken = await call(
        srv, "POST", "/v1/runs", {"input": "peek", "session_id": "legacy-session-1"}, auth=acme
    )
    assert_error(taken, 404, "session_not_found")
    # The same words in chat land in different sessions per tenant (the chat index is per tenant).
    one = await call(srv, "POST", "/v1/chat/completions", chat, auth=acme)
    two = await call(srv, "POST", "/v1/chat/completions", chat, auth=globex)
    assert one.status == two.status == 200
    assert one.headers["X-Hermes-Session-Id"] != two.headers["X-Hermes-Session-Id"]
    # The response is still acme's after all of globex's attempts.
    assert (await call(srv, "GET", f"/v1/responses/{rid}", auth=acme)).status == 200


async def wait_status_as(srv: Server, run_id: str, auth: str) -> None:
    async def ended() -> bool:
        reply = await call(srv, "GET", f"/v1/runs/{run_id}", auth=auth)
        return reply.json.get("status") == "completed"

    await eventually(ended, what="the run completed")


__all__ = ["cli_key", "hermes_keys", "http_key", "wait_status"]


async def test_malformed_tenant_and_key_ids_get_clear_errors(make_server: Any) -> None:
    """Found by schemathesis: a NUL byte in ``?tenant=`` reached the store and answered 500."""
    srv: Server = make_server()
    for bad in ("B%00", "UPPER", "-x", "a" * 65):
        reply = await call(srv, "GET", f"/v1/keys?tenant={bad}")
        assert assert_error(reply, 400, "invalid_value")["param"] == "tenant"
    assert (await call(srv, "GET", "/v1/keys?tenant=acme")).status == 200
    for bad_id in ("a%00b", "..", "x" * 300):
        reply = await call(srv, "DELETE", f"/v1/keys/{bad_id}")
        assert reply.status == 404, (bad_id, reply.status, reply.text)
