"""Tenants on ``hermes tui --ws`` beyond the sessions a connection makes itself
(docs/reference/tui-gateway.md#tenants): the child sessions of a tenant's delegation, the
questions those children ask, the spawn trees a client saves, and the turns a slash command
starts are all the tenant's own; another tenant's are answered exactly like unknown ones."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.api.test_api_scoped_keys import cli_key
from tests.timing import scaled, within_one_budget_minute
from tests.tui.client import WsClient, WsServer, write_config
from tests.tui.test_ws_tenants import UNKNOWN, answer, comparable, turn

TOKEN = "ws-tenant-children-token-0123456789"


def delegate(**args: Any) -> str:
    return f"[[tool delegate_task {json.dumps(args)}]]"


@dataclass
class Setup:
    srv: WsServer
    acme: str
    globex: str
    clients: list[WsClient] = field(default_factory=list)

    async def connect(self, secret: str) -> WsClient:
        client = await WsClient.connect(self.srv.url, headers={"Authorization": f"Bearer {secret}"})
        self.clients.append(client)
        await client.wait(lambda: client.frames)  # gateway.ready, not a 4401 close
        return client


async def _setup(
    home: Path, config: str, scopes: str, env: dict[str, str] | None = None
) -> AsyncIterator[Setup]:
    write_config(home, config)
    acme, _ = cli_key(home, "acme", scopes)
    globex, _ = cli_key(home, "globex", scopes)
    setup = Setup(WsServer(home, TOKEN, env=env), acme, globex)
    try:
        yield setup
    finally:
        for client in setup.clients:
            await client.close()
        setup.srv.stop()


@pytest.fixture
async def two(tmp_path: Path) -> AsyncIterator[Setup]:
    async for setup in _setup(tmp_path / "home", 'model = "mock:echo"\n', "observe,control,approve"):
        yield setup


async def test_a_delegated_child_session_is_its_root_tenants(two: Setup) -> None:
    a = await two.connect(two.acme)
    token = await two.connect(TOKEN)
    a_sid = (await a.call("session.create", {}))["session_id"]
    done = await turn(a, a_sid, delegate(goal="[[tokens 3]] child work"))
    child = json.loads(done["text"].removeprefix("Done: "))["results"][0]["subagent_id"]
    assert child != a_sid
    # The default tenant (the gateway's token) cannot see or open acme's child session...
    theirs = await answer(token, "session.resume", {"session_id": child})
    unknown = await answer(token, "session.resume", {"session_id": UNKNOWN})
    assert comparable(theirs, child) == comparable(unknown, UNKNOWN), (theirs, unknown)
    assert child not in json.dumps(await token.call("session.list", {}))
    # ... and acme, whose delegation made it, can.
    resumed = await a.call("session.resume", {"session_id": child})
    assert resumed["session_id"] == child


async def test_spawn_tree_save_is_scoped_to_the_tenants_sessions(two: Setup) -> None:
    a = await two.connect(two.acme)
    g = await two.connect(two.globex)
    token = await two.connect(TOKEN)
    a_sid = (await a.call("session.create", {}))["session_id"]
    tree = {"subagents": [{"subagent_id": "x", "status": "completed"}], "label": "planted"}
    for other in (g, token):
        theirs = await answer(other, "spawn_tree.save", {**tree, "session_id": a_sid})
        unknown = await answer(other, "spawn_tree.save", {**tree, "session_id": UNKNOWN})
        assert comparable(theirs, a_sid) == comparable(unknown, UNKNOWN), (theirs, unknown)
        assert "error" in theirs, theirs
    assert not (await a.call("spawn_tree.list", {"session_id": a_sid}))["entries"]
    saved = await a.call("spawn_tree.save", {**tree, "session_id": a_sid, "label": "mine"})
    assert saved["session_id"] == a_sid
    entries = (await a.call("spawn_tree.list", {"session_id": a_sid}))["entries"]
    assert [e["label"] for e in entries] == ["mine"]
    # The default tenant's token still saves the trees of its own sessions.
    t_sid = (await token.call("session.create", {}))["session_id"]
    assert (await token.call("spawn_tree.save", {**tree, "session_id": t_sid}))["session_id"] == t_sid


# A stand-in for sudo: never passwordless; with -S it records the password and runs the command.
FAKE_SUDO = """#!/bin/sh
if [ "$1" = "-n" ]; then exit 1; fi
if [ "$1" = "-S" ]; then
  shift
  read -r pw
  printf '%s' "$pw" > "$(dirname "$0")/password-seen"
fi
exec "$@"
"""


@pytest.fixture
async def with_sudo(tmp_path: Path) -> AsyncIterator[tuple[Setup, Path]]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "sudo").write_text(FAKE_SUDO, encoding="utf-8")
    (bindir / "sudo").chmod(0o755)
    env = {"PATH": f"{bindir}:{os.environ.get('PATH', '')}"}
    config = 'model = "mock:echo"\n'
    async for setup in _setup(tmp_path / "home", config, "observe,control,approve", env):
        yield setup, bindir


async def test_only_the_tenant_answers_its_childs_question(with_sudo: tuple[Setup, Path]) -> None:
    two, bindir = with_sudo
    a = await two.connect(two.acme)
    g = await two.connect(two.globex)
    token = await two.connect(TOKEN)
    a_sid = (await a.call("session.create", {}))["session_id"]
    await a.call("prompt.submit", {"session_id": a_sid, "text": delegate(goal="[[sudo echo root-things]]")})
    approval = (await a.wait(lambda: a.events(a_sid, "approval.request"), timeout=scaled(15)))[0]["payload"]
    child = approval["task_id"]
    assert child and child != a_sid  # asked by the child, on acme's session
    await a.call(
        "approval.respond", {"session_id": a_sid, "request_id": approval["request_id"], "choice": "once"}
    )
    request = (await a.wait(lambda: a.events(a_sid, "sudo.request"), timeout=scaled(15)))[0]["payload"]
    rid = request["request_id"]
    assert request["task_id"] == child
    for other in (g, token):
        theirs = await answer(other, "sudo.respond", {"request_id": rid, "password": "stolen"})
        unknown = await answer(other, "sudo.respond", {"request_id": "sudo-nope", "password": "x"})
        assert theirs == unknown and "error" in theirs, (theirs, unknown)
    assert await a.call("sudo.respond", {"request_id": rid, "password": "mine"}) == {"status": "ok"}
    done = await a.wait(lambda: a.events(a_sid, "message.complete"), timeout=scaled(15))
    assert done[-1]["payload"]["status"] == "complete", done
    assert (bindir / "password-seen").read_text() == "mine"


BUDGETS = """model = "mock:echo"
[budgets]
max_output_tokens = 10
[budgets.tenants.acme]
requests_per_minute = 1
"""


@pytest.fixture
async def budgeted(tmp_path: Path) -> AsyncIterator[Setup]:
    async for setup in _setup(tmp_path / "home", BUDGETS, "observe,control"):
        yield setup


async def test_a_turn_a_slash_command_starts_charges_the_tenant(budgeted: Setup) -> None:
    """``/retry`` (and an undo-then-resend) hand the turn back to the host, which submits it over
    the same connection: it charges the connection's key and tenant, never the default."""
    a = await budgeted.connect(budgeted.acme)
    a_sid = (await a.call("session.create", {}))["session_id"]
    await within_one_budget_minute()  # one request a minute: the refusals below are in its window
    assert (await turn(a, a_sid, "one"))["status"] == "complete"

    async def refused_after(params: dict[str, Any]) -> None:
        before = len(a.events(a_sid, "message.complete"))
        await a.call("prompt.submit", {"session_id": a_sid, **params})
        await a.wait(lambda: len(a.events(a_sid, "message.complete")) > before, timeout=scaled(15))
        refused = a.events(a_sid, "message.complete")[-1]["payload"]
        assert refused["status"] == "error" and refused["error"]["code"] == "budget_exceeded", refused
        assert "tenant:acme" in refused["error"]["message"], refused

    directive = await a.call("command.dispatch", {"command": "/retry", "session_id": a_sid})
    assert directive["type"] == "send" and directive["message"] == "one", directive
    await refused_after({"text": directive["message"]})
    # The Ink TUI's edit-and-resend: rewind to before the first prompt and submit again.
    history = (await a.call("session.history", {"session_id": a_sid}))["messages"]
    first = next(m["row_id"] for m in history if m["role"] == "user")
    await refused_after(
        {
            "text": "one again",
            "truncate_before_row_id": first,
            "confirm_truncate": True,
            "confirm_empty_truncate": True,
        }
    )
