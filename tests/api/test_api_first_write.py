"""A new stateless chat's first writes — the writer lease and the user row — run while its model
call goes out (docs/reference/core.md#writer-lease, docs/reference/api-server.md#chat-completions).

Seen from a client, through the ``openai`` provider to a fake upstream, on a real SQLite file
whose triggers make those writes slow or fail: nothing of the reply is shown before the user row
is stored, and a failed write ends the request with the error a failed open or user row always
gave, with nothing of the turn stored.

A write made while the database thread is idle may run inline on the loop (hermes_sqlite.inline):
then the slow writes here hold the loop, and the call goes out after them, or, when they fail,
not at all. Where that matters, a test accepts either.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from tests.api.api_helpers import Server
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream
from tests.providers.vendors import OPENAI, delta
from tests.timing import eventually, scaled

# SQLite evaluates this while the trigger's statement runs: a few hundred milliseconds on the
# database thread, during which the loop sends the model call (it releases the GIL meanwhile).
SLOW = (
    "(WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 300000) "
    "SELECT count(*) FROM n) > 0"
)
LEASE_TRIGGER = (
    "CREATE TRIGGER test_lease BEFORE INSERT ON sessions WHEN NEW.placeholder = 1 AND {slow} "
    "BEGIN {body}; END"
)
ROW_TRIGGER = (
    "CREATE TRIGGER test_row BEFORE INSERT ON messages WHEN NEW.content LIKE '%doomed%' AND {slow} "
    "BEGIN SELECT RAISE(ABORT, 'disk I/O refused by the test'); END"
)


def _sql(home: Path, *statements: str) -> None:
    with sqlite3.connect(home / "hermes.sqlite3", timeout=scaled(10)) as db:
        for statement in statements:
            db.execute(statement)


def _stored(home: Path, session_id: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The session's row (if any) and its messages, as another reader of the file sees them."""
    with sqlite3.connect(home / "hermes.sqlite3", timeout=scaled(10)) as db:
        session = db.execute("SELECT id, placeholder FROM sessions WHERE id = ?", (session_id,)).fetchall()
        rows = db.execute(
            "SELECT role, content FROM messages WHERE session_id = ? ORDER BY position, id", (session_id,)
        ).fetchall()
    return session, rows


def _server(make_server: Callable[..., Server], up: FakeUpstream) -> Server:
    return make_server(
        f'model = "openai:{OPENAI.model}"\n'
        f'[providers.openai]\napi_key = "{OPENAI.key}"\nbase_url = "{OPENAI.root(up.url)}"\n'
    )


def _calls(up: FakeUpstream) -> list[Any]:
    return [r for r in up.requests if r.path == OPENAI.chat_path]


async def _post(server: Server, text: str) -> aiohttp.ClientResponse:
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=scaled(60)))
    body = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": text}]}
    reply = await session.post(f"{server.base}/v1/chat/completions", json=body, headers=server.auth())
    reply.release_later = session  # type: ignore[attr-defined]
    return reply


async def _frames(reply: aiohttp.ClientResponse) -> list[Any]:
    frames: list[Any] = []
    async for line in reply.content:
        if line.startswith(b"data: "):
            data = line[6:].strip()
            frames.append("[DONE]" if data == b"[DONE]" else json.loads(data))
    return frames


def _text(frames: list[Any]) -> str:
    """The content the frames streamed."""
    chunks = [f for f in frames if f != "[DONE]" and f["choices"]]
    return "".join(f["choices"][0]["delta"].get("content") or "" for f in chunks)


async def _close(reply: aiohttp.ClientResponse) -> None:
    reply.release()
    await reply.release_later.close()  # type: ignore[attr-defined]


async def _echo(request: web.Request) -> web.StreamResponse:
    """Answer ``Re: <the last message>``."""
    said = (await request.json())["messages"][-1]["content"]
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for frame in OPENAI.reply(f"Re: {said}"):
        await response.write(frame)
    await response.write_eof()
    return response


async def test_the_user_row_is_stored_before_any_of_the_reply_is_shown(
    make_server: Callable[..., Server],
) -> None:
    """The lease is slow; the upstream answers at once and then waits: the client's first
    delta arrives only once the user row is durable, and the end only once the reply is."""
    go_on = asyncio.Event()

    async def upstream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(delta(role="assistant", content="Hel"))
        await go_on.wait()
        for frame in (delta(content="lo."), delta(finish_reason="stop"), OPENAI_DONE):
            await response.write(frame)
        await response.write_eof()
        return response

    async with FakeUpstream() as up:
        up.on("POST", OPENAI.chat_path, upstream)
        server = _server(make_server, up)
        _sql(server.home, LEASE_TRIGGER.format(slow=SLOW, body="SELECT 1"))
        reply = await _post(server, "remember me")
        try:
            assert reply.status == 200, await reply.text()
            session_id = reply.headers["X-Hermes-Session-Id"]
            first = None
            while first is None:
                line = await reply.content.readline()
                assert line, "the stream ended before its first delta"
                if line.startswith(b"data: {"):
                    chunk = json.loads(line[6:])
                    if chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                        first = chunk["choices"][0]["delta"]["content"]
            assert first == "Hel"
            # Read by another connection while the upstream holds the rest of its reply.
            assert _stored(server.home, session_id) == ([(session_id, 0)], [("user", "remember me")])
            assert _calls(up)[0].body["messages"][-1] == {"role": "user", "content": "remember me"}
            go_on.set()
            rest = await _frames(reply)
        finally:
            await _close(reply)
        assert rest[-1] == "[DONE]"
        assert [c["choices"][0]["finish_reason"] for c in rest[:-1] if c["choices"]][-1] == "stop"
        assert _stored(server.home, session_id)[1] == [("user", "remember me"), ("assistant", "Hello.")]


async def test_a_failing_user_row_ends_the_stream_with_a_storage_error_and_stores_nothing(
    make_server: Callable[..., Server],
) -> None:
    async with FakeUpstream() as up:
        up.on("POST", OPENAI.chat_path, _echo)
        server = _server(make_server, up)
        _sql(server.home, ROW_TRIGGER.format(slow=SLOW))
        reply = await _post(server, "doomed prompt")
        try:
            assert reply.status == 200, await reply.text()
            session_id = reply.headers["X-Hermes-Session-Id"]
            frames = await _frames(reply)
        finally:
            await _close(reply)
        # The call went out while the row was being written, with the prompt as its last message
        # (or, the write run inline on the loop, not at all).
        sent = [c.body["messages"][-1] for c in _calls(up)]
        assert sent in ([], [{"role": "user", "content": "doomed prompt"}])
        assert frames[-1] == "[DONE]"
        last = [f for f in frames[:-1] if f["choices"]][-1]
        assert last["choices"][0]["finish_reason"] == "error"
        assert last["hermes"]["error_code"] == "storage_error"
        assert "disk I/O refused by the test" in last["hermes"]["error"]
        assert _text(frames) == ""  # nothing of the upstream's answer
        await eventually(lambda: _stored(server.home, session_id) == ([], []), what="nothing stored")

        _sql(server.home, "DROP TRIGGER test_row")
        again = await _post(server, "a fine prompt")
        try:
            assert again.status == 200
            text = _text(await _frames(again))
        finally:
            await _close(again)
        assert text == "Re: a fine prompt"
        assert "exception was never retrieved" not in "".join(server.log)


async def test_a_failing_lease_ends_the_request_with_the_open_error_and_stores_nothing(
    make_server: Callable[..., Server],
) -> None:
    """The lease fails after the call went out: the client gets the 500 a failed open always
    gave (no stream begins), the call is dropped, and nothing of the turn is stored."""
    async with FakeUpstream() as up:
        up.on("POST", OPENAI.chat_path, _echo)
        server = _server(make_server, up)
        refuse = "SELECT RAISE(ABORT, 'lease refused by the test')"
        _sql(server.home, LEASE_TRIGGER.format(slow=SLOW, body=refuse))
        reply = await _post(server, "first words")
        try:
            assert reply.status == 500, await reply.text()
            error = (await reply.json())["error"]
            assert error["code"] == "internal_error"
            assert "X-Hermes-Session-Id" not in reply.headers
        finally:
            await _close(reply)
        # Or, the lease taken inline on the loop, it failed before the call could go out.
        sent = [c.body["messages"][-1] for c in _calls(up)]
        assert sent in ([], [{"role": "user", "content": "first words"}])
        with sqlite3.connect(server.home / "hermes.sqlite3") as db:
            assert db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
            assert db.execute("SELECT count(*) FROM messages").fetchone() == (0,)

        _sql(server.home, "DROP TRIGGER test_lease")
        again = await _post(server, "second try")
        try:
            assert again.status == 200
            text = _text(await _frames(again))
        finally:
            await _close(again)
        assert text == "Re: second try"
        assert "exception was never retrieved" not in "".join(server.log)


async def test_a_folder_that_cannot_be_made_ends_the_request_with_the_open_error(
    make_server: Callable[..., Server],
) -> None:
    """A new chat's folder is made while its call goes out: when it cannot be made, the client
    gets the 500 a failed open gave, and nothing is stored."""
    async with FakeUpstream() as up:
        up.on("POST", OPENAI.chat_path, _echo)
        server = _server(make_server, up)
        first = await _post(server, "one")
        try:
            assert first.status == 200
            await _frames(first)
        finally:
            await _close(first)
        folders = server.home / "workspaces"
        assert folders.is_dir()
        shutil.rmtree(folders)
        folders.write_text("not a folder")  # every new session's folder fails to be made
        reply = await _post(server, "two")
        try:
            assert reply.status == 500, await reply.text()
            assert (await reply.json())["error"]["code"] == "internal_error"
        finally:
            await _close(reply)
        # The call may have gone out meanwhile (it is dropped), or not yet when the folder failed.
        assert [c.body["messages"][-1]["content"] for c in _calls(up)][1:] in ([], ["two"])
        with sqlite3.connect(server.home / "hermes.sqlite3") as db:
            assert db.execute("SELECT count(*) FROM sessions").fetchone() == (1,)
            assert db.execute("SELECT count(*) FROM messages WHERE content = 'two'").fetchone() == (0,)

        folders.unlink()
        again = await _post(server, "three")
        try:
            assert again.status == 200
            text = _text(await _frames(again))
        finally:
            await _close(again)
        assert text == "Re: three"
        assert "exception was never retrieved" not in "".join(server.log)
