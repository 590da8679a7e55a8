"""Tenants on ``hermes tui --ws`` (docs/reference/tui-gateway.md#tenants): a stored key of any
tenant connects and sees only its tenant's sessions; another tenant's session id is answered
exactly like an unknown id, by every session-addressed method; a turn charges the key's and
its tenant's budget buckets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.api.test_api_scoped_keys import cli_key
from tests.timing import scaled, within_one_budget_minute
from tests.tui.client import RpcFailure, WsClient, WsServer, write_config

UNKNOWN = "20260101_000000_abcdef"

#: Every method that names a session, with the params it is called with.
ADDRESSED: dict[str, dict[str, Any]] = {
    "session.resume": {},
    "session.activate": {},
    "session.history": {},
    "session.events.since": {"last_seen": 0},
    "session.branch": {},
    "session.title": {},
    "session.status": {},
    "session.usage": {},
    "session.delete": {},
    "session.close": {},
    "session.undo": {},
    "session.save": {},
    "session.compress": {},
    "session.interrupt": {},
    "session.steer": {"text": "x"},
    "prompt.submit": {"text": "x"},
    "prompt.background": {"text": "x"},
    "approval.respond": {"choice": "deny"},
    "subagent.list": {},
    "delegation.status": {},
    "terminal.resize": {"cols": 100},
    "rollback.list": {},
    "process.stop": {},
    "spawn_tree.list": {},
    "spawn_tree.save": {"subagents": [{"subagent_id": "x"}]},
    "command.dispatch": {"name": "help"},
    "session.create": {},  # as parent_session_id
}


async def answer(client: WsClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Return ``{"result": …}`` or ``{"error": {code, message, data}}``."""
    try:
        return {"result": await client.call(method, params)}
    except RpcFailure as exc:
        return {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}


def named(method: str, sid: str) -> dict[str, Any]:
    params = dict(ADDRESSED[method])
    params["parent_session_id" if method == "session.create" else "session_id"] = sid
    return params


async def turn(client: WsClient, sid: str, text: str) -> dict[str, Any]:
    before = len(client.events(sid, "message.complete"))
    await client.call("prompt.submit", {"session_id": sid, "text": text})
    await client.wait(lambda: len(client.events(sid, "message.complete")) > before, timeout=scaled(15))
    payload: dict[str, Any] = client.events(sid, "message.complete")[-1]["payload"]
    return payload


def comparable(reply: dict[str, Any], sid: str) -> str:
    """A reply with the id it names replaced, and volatile new ids dropped."""
    if "result" in reply:
        return "result"  # a result that names no session is the same whatever the id
    return json.dumps(reply).replace(sid, "<id>")


async def test_each_tenant_sees_only_its_own_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home)
    acme, _ = cli_key(home, "acme", "observe,control,approve")
    globex, _ = cli_key(home, "globex", "observe,control,approve")
    srv = WsServer(home, "ws-tenants-token-0123456789abcdef")
    clients: list[WsClient] = []

    async def connect(secret: str) -> WsClient:
        client = await WsClient.connect(srv.url, headers={"Authorization": f"Bearer {secret}"})
        clients.append(client)
        await client.wait(lambda: client.frames)  # gateway.ready, not a 4401 close
        return client

    try:
        a = await connect(acme)
        g = await connect(globex)
        token = await connect(srv.token)
        a_sid = (await a.call("session.create", {"title": "acme work"}))["session_id"]
        assert (await turn(a, a_sid, "hello from acme"))["status"] == "complete"
        g_sid = (await g.call("session.create", {}))["session_id"]
        assert (await turn(g, g_sid, "hello from globex"))["status"] == "complete"

        def ids(listing: dict[str, Any]) -> set[str]:
            return {s["id"] for s in listing["sessions"]}

        assert a_sid in ids(await a.call("session.list", {}))
        assert g_sid not in ids(await a.call("session.list", {}))
        assert ids(await g.call("session.list", {})) == {g_sid}
        # The gateway's own token is the default tenant's: neither named tenant's sessions.
        assert not ids(await token.call("session.list", {})) & {a_sid, g_sid}
        assert (await g.call("session.most_recent", {}))["session_id"] == g_sid
        assert a_sid not in json.dumps(await g.call("session.active_list", {}))

        # Every method that names a session answers acme's id exactly like an unknown one.
        for other in (g, token):
            for method in ADDRESSED:
                theirs = await answer(other, method, named(method, a_sid))
                unknown = await answer(other, method, named(method, UNKNOWN))
                assert comparable(theirs, a_sid) == comparable(unknown, UNKNOWN), (method, theirs, unknown)
                assert a_sid not in json.dumps(theirs.get("result", "")), (method, theirs)
        # By title too, and through /resume.
        by_title = await answer(g, "session.resume", {"session_id": "acme work"})
        assert by_title["error"]["code"] == 4007
        listed = await g.call("command.dispatch", {"command": "/resume", "session_id": g_sid})
        assert g_sid in json.dumps(listed) and a_sid not in json.dumps(listed)
        for target in (a_sid, "acme work"):
            theirs = await answer(
                g, "command.dispatch", {"command": f"/resume {target}", "session_id": g_sid}
            )
            unknown = await answer(
                g, "command.dispatch", {"command": f"/resume {UNKNOWN}", "session_id": g_sid}
            )
            assert comparable(theirs, target) == comparable(unknown, UNKNOWN), (theirs, unknown)

        # acme's session is untouched, and a second acme connection resumes it.
        again = await connect(acme)
        resumed = await again.call("session.resume", {"session_id": a_sid})
        assert resumed["session_id"] == a_sid and resumed["message_count"] >= 2
        assert (await turn(again, a_sid, "still mine"))["status"] == "complete"
    finally:
        for client in clients:
            await client.close()
        srv.stop()

    # After a restart the tenants are read from storage.
    srv = WsServer(home, "ws-tenants-token-0123456789abcdef")
    try:
        g = await WsClient.connect(srv.url, headers={"Authorization": f"Bearer {globex}"})
        a = await WsClient.connect(srv.url, headers={"Authorization": f"Bearer {acme}"})
        try:
            theirs = await answer(g, "session.resume", {"session_id": a_sid})
            unknown = await answer(g, "session.resume", {"session_id": UNKNOWN})
            assert comparable(theirs, a_sid) == comparable(unknown, UNKNOWN)
            assert (await a.call("session.resume", {"session_id": a_sid}))["session_id"] == a_sid
        finally:
            await g.close()
            await a.close()
    finally:
        srv.stop()


BUDGETS = """model = "mock:echo"
[budgets]
max_output_tokens = 10
[budgets.tenants.acme]
requests_per_minute = 1
"""


async def test_a_tenant_key_charges_its_tenant_bucket(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home, BUDGETS)
    acme, _ = cli_key(home, "acme", "observe,control")
    globex, _ = cli_key(home, "globex", "observe,control")
    srv = WsServer(home, "ws-tenants-token-0123456789abcdef")
    try:
        a = await WsClient.connect(srv.url, headers={"Authorization": f"Bearer {acme}"})
        g = await WsClient.connect(srv.url, headers={"Authorization": f"Bearer {globex}"})
        try:
            a_sid = (await a.call("session.create", {}))["session_id"]
            await within_one_budget_minute()
            assert (await turn(a, a_sid, "one"))["status"] == "complete"
            refused = await turn(a, a_sid, "two")
            assert refused["status"] == "error" and refused["error"]["code"] == "budget_exceeded"
            assert "tenant:acme" in refused["error"]["message"]
            # A background task started over the same connection charges the same buckets.
            task = (await a.call("prompt.background", {"session_id": a_sid, "text": "three"}))["task_id"]
            done = await a.wait(
                lambda: [
                    e for e in a.events(a_sid, "background.complete") if e["payload"]["task_id"] == task
                ],
                timeout=scaled(15),
            )
            assert "tenant:acme" in done[0]["payload"]["text"], done
            g_sid = (await g.call("session.create", {}))["session_id"]
            for text in ("one", "two"):  # globex has no limit of its own
                assert (await turn(g, g_sid, text))["status"] == "complete"
        finally:
            await a.close()
            await g.close()
    finally:
        srv.stop()
