"""A tenant's stored key starting a new stateless chat: the session's tenant claim is stored by its
first write, with the session, and nothing is written or revealed without it
(docs/reference/api-server.md#tenants, docs/reference/core.md#writer-lease).

Seen from a client, through the ``openai`` provider to a fake upstream, on a real SQLite file
whose trigger makes the claim slow and then fail: the request ends with the error a failed open
always gave, before any frame, with nothing stored and no claim for the id; the next one works,
and its session is the tenant's only. (A claim stored inline on the loop, the database thread
being idle, holds the loop while it is slow: the call then goes out after it, or not at all.)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from tests.api.api_helpers import Server, assert_error, call
from tests.api.test_api_first_write import SLOW, _calls, _close, _echo, _frames, _server, _sql, _text
from tests.api.test_api_scoped_keys import http_key
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import OPENAI
from tests.timing import eventually, scaled

CLAIM_TRIGGER = (
    "CREATE TRIGGER test_claim BEFORE INSERT ON records WHEN NEW.namespace = 'api.session_owners' "
    "AND {slow} BEGIN SELECT RAISE(ABORT, 'claim refused by the test'); END"
)


async def _post(server: Server, text: str, bearer: str) -> aiohttp.ClientResponse:
    """Start a new streamed chat as ``bearer`` (closed with ``_close``)."""
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=scaled(60)))
    body = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": text}]}
    url = f"{server.base}/v1/chat/completions"
    reply = await session.post(url, json=body, headers={"Authorization": bearer})
    reply.release_later = session  # type: ignore[attr-defined]
    return reply


def _owners(home: Path) -> list[tuple[str, str]]:
    """Every stored session claim: (session id, owner)."""
    with sqlite3.connect(home / "hermes.sqlite3") as db:
        return db.execute("SELECT key, owner FROM records WHERE namespace = 'api.session_owners'").fetchall()


async def test_a_failing_tenant_claim_ends_the_request_before_any_frame_and_stores_nothing(
    make_server: Callable[..., Server],
) -> None:
    async with FakeUpstream() as up:
        up.on("POST", OPENAI.chat_path, _echo)
        server = _server(make_server, up)
        acme = await http_key(server, "acme", ["observe", "control"])
        bearer = f"Bearer {acme['secret']}"
        _sql(server.home, CLAIM_TRIGGER.format(slow=SLOW))
        reply = await _post(server, "first words", bearer)
        try:
            assert reply.status == 500, await reply.text()
            assert (await reply.json())["error"]["code"] == "internal_error"
            assert "X-Hermes-Session-Id" not in reply.headers
        finally:
            await _close(reply)
        # The call went out while the claim was being stored, and was dropped unread (or, the
        # claim stored inline on the loop, it never went out).
        sent = [c.body["messages"][-1] for c in _calls(up)]
        assert sent in ([], [{"role": "user", "content": "first words"}])
        with sqlite3.connect(server.home / "hermes.sqlite3") as db:
            assert db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
            assert db.execute("SELECT count(*) FROM messages").fetchone() == (0,)
        assert _owners(server.home) == []
        # The server says why (its stderr is read as it comes).
        await eventually(lambda: "claim refused by the test" in "".join(server.log), what="the logged cause")

        _sql(server.home, "DROP TRIGGER test_claim")
        again = await _post(server, "second try", bearer)
        try:
            assert again.status == 200
            session_id = again.headers["X-Hermes-Session-Id"]
            text = _text(await _frames(again))
        finally:
            await _close(again)
        assert text == "Re: second try"
        assert _owners(server.home) == [(session_id, "tenant:acme")]
        assert "exception was never retrieved" not in "".join(server.log)


async def test_a_tenants_new_chat_is_invisible_to_other_tenants_and_the_default_key(
    make_server: Callable[..., Server],
) -> None:
    async with FakeUpstream() as up:
        up.replies(OPENAI.chat_path, [OPENAI.reply("Mine."), OPENAI.reply("Mine again.")])
        server = _server(make_server, up)
        acme = f"Bearer {(await http_key(server, 'acme', ['observe', 'control']))['secret']}"
        globex = f"Bearer {(await http_key(server, 'globex', ['observe', 'control']))['secret']}"
        reply = await _post(server, "acme's secret plan", acme)
        try:
            assert reply.status == 200
            session_id = reply.headers["X-Hermes-Session-Id"]
            assert _text(await _frames(reply)) == "Mine."
        finally:
            await _close(reply)
        assert _owners(server.home) == [(session_id, "tenant:acme")]
        body: dict[str, Any] = {"model": "hermes-agent", "messages": [{"role": "user", "content": "peek"}]}
        for auth in (globex, f"Bearer {server.key}"):
            taken = await call(
                server,
                "POST",
                "/v1/chat/completions",
                body,
                auth=auth,
                headers={"X-Hermes-Session-Id": session_id},
            )
            assert_error(taken, 404, "session_not_found")
        mine = await call(
            server,
            "POST",
            "/v1/chat/completions",
            {"model": "hermes-agent", "messages": [{"role": "user", "content": "more"}]},
            auth=acme,
            headers={"X-Hermes-Session-Id": session_id},
        )
        assert mine.status == 200, mine.text
        assert mine.json["choices"][0]["message"]["content"] == "Mine again."
        assert len(_calls(up)) == 2
