"""A new stateless chat's first write — the session with its writer lease and the user row, one
transaction on SQLite — runs while its model call goes out (docs/reference/core.md#writer-lease,
docs/reference/api-server.md#chat-completions).

Seen from a client, through the ``openai`` provider to a fake upstream, on a real SQLite file
whose triggers make those writes slow or fail: nothing of the reply is shown before the user row
is stored; a failed first write ends the request with the error of a failed open, and a failed
user row of a stored session ends the stream with a storage error; nothing of the turn is stored.
A new chat's folder waits for its first tool.

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
import pytest
from aiohttp import web

from tests.api.api_helpers import Server
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream
from tests.providers.vendors import OPENAI, delta
from tests.timing import scaled

# SQLite evaluates this while the trigger's statement runs: a few hundred milliseconds on the
# database thread, during which the loop sends the model call (it releases the GIL meanwhile).
SLOW = (
    "(WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 300000) "
    "SELECT count(*) FROM n) > 0"
)
# The write that stores a new session with its writer lease (placeholder = 0, a lease owner).
SESSION_TRIGGER = (
    "CREATE TRIGGER test_session BEFORE INSERT ON sessions WHEN NEW.placeholder = 0 "
    "AND NEW.lease_owner IS NOT NULL AND {slow} BEGIN {body}; END"
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


async def _post(server: Server, text: str, headers: dict[str, str] | None = None) -> aiohttp.ClientResponse:
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=scaled(60)))
    body = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": text}]}
    reply = await session.post(
        f"{server.base}/v1/chat/completions", json=body, headers={**server.auth(), **(headers or {})}
    )
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
    """The first write is slow; the upstream answers at once and then waits: the client's first
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
        _sql(server.home, SESSION_TRIGGER.format(slow=SLOW, body="SELECT 1"))
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


async def test_a_failing_user_row_of_a_stored_session_ends_the_stream_with_a_storage_error(
    make_server: Callable[..., Server],
) -> None:
    """A session the caller names, stored already: its user row fails after the call went out,
    and the stream ends with a storage error, nothing of the upstream's answer, nothing stored."""
    async with FakeUpstream() as up:
        up.on("POST", OPENAI.chat_path, _echo)
        server = _server(make_server, up)
        named = {"X-Hermes-Session-Id": "named-chat"}
        first = await _post(server, "hello", named)
        try:
            assert first.status == 200
            await _frames(first)
        finally:
            await _close(first)
        _sql(server.home, ROW_TRIGGER.format(slow=SLOW))
        reply = await _post(server, "doomed prompt", named)
        try:
            assert reply.status == 200, await reply.text()
            frames = await _frames(reply)
        finally:
            await _close(reply)
        # The call went out while the row was being written, with the prompt as its last message.
        # (Or, the write run inline on the loop before the call could go out, not at all.)
        sent = [c.body["messages"][-1] for c in _calls(up)[1:]]
        assert sent in ([], [{"role": "user", "content": "doomed prompt"}])
        assert frames[-1] == "[DONE]"
        last = [f for f in frames[:-1] if f["choices"]][-1]
        assert last["choices"][0]["finish_reason"] == "error"
        assert last["hermes"]["error_code"] == "storage_error"
        assert "disk I/O refused by the test" in last["hermes"]["error"]
        assert _text(frames) == ""  # nothing of the upstream's answer
        assert _stored(server.home, "named-chat")[1] == [("user", "hello"), ("assistant", "Re: hello")]

        _sql(server.home, "DROP TRIGGER test_row")
        again = await _post(server, "a fine prompt", named)
        try:
            assert again.status == 200
            text = _text(await _frames(again))
        finally:
            await _close(again)
        assert text == "Re: a fine prompt"
        assert "exception was never retrieved" not in "".join(server.log)


@pytest.mark.parametrize("where", ["session", "row"])
async def test_a_failing_first_write_ends_the_request_with_the_open_error_and_stores_nothing(
    make_server: Callable[..., Server], where: str
) -> None:
    """A new chat's first write stores the session, its writer lease and the user row in one
    transaction: when it fails (at the session or at the row) after the call went out, the client
    gets the 500 a failed open always gave (no stream begins), the call is dropped, and nothing of
    the turn is stored; the next chat works."""
    async with FakeUpstream() as up:
        up.on("POST", OPENAI.chat_path, _echo)
        server = _server(make_server, up)
        if where == "session":
            refuse = "SELECT RAISE(ABORT, 'session write refused by the test')"
            _sql(server.home, SESSION_TRIGGER.format(slow=SLOW, body=refuse))
        else:
            _sql(server.home, ROW_TRIGGER.format(slow=SLOW))
        reply = await _post(server, "doomed first words")
        try:
            assert reply.status == 500, await reply.text()
            assert (await reply.json())["error"]["code"] == "internal_error"
            assert "X-Hermes-Session-Id" not in reply.headers
        finally:
            await _close(reply)
        # (Or, the write run inline on the loop before the call could go out, not at all.)
        sent = [c.body["messages"][-1] for c in _calls(up)]
        assert sent in ([], [{"role": "user", "content": "doomed first words"}])
        with sqlite3.connect(server.home / "hermes.sqlite3") as db:
            assert db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
            assert db.execute("SELECT count(*) FROM messages").fetchone() == (0,)

        _sql(server.home, f"DROP TRIGGER test_{where}")
        again = await _post(server, "second try")
        try:
            assert again.status == 200
            text = _text(await _frames(again))
        finally:
            await _close(again)
        assert text == "Re: second try"
        assert "exception was never retrieved" not in "".join(server.log)


def _tool_call(name: str, arguments: dict[str, str]) -> list[bytes]:
    """A streamed reply that calls one tool."""
    call = {"index": 0, "id": f"call_{name}", "type": "function"}
    call["function"] = {"name": name, "arguments": json.dumps(arguments)}  # type: ignore[assignment]
    return [delta(tool_calls=[call]), delta(finish_reason="tool_calls"), OPENAI_DONE]


def _tool_result(up: FakeUpstream, at: int) -> str:
    """The tool message the ``at``-th upstream call carried back."""
    return str([m for m in _calls(up)[at].body["messages"] if m["role"] == "tool"][-1]["content"])


async def _chat_session(server: Server, text: str) -> tuple[str, str]:
    """Stream a new chat; return its session id and the text it streamed."""
    reply = await _post(server, text)
    try:
        assert reply.status == 200, await reply.text()
        return reply.headers["X-Hermes-Session-Id"], _text(await _frames(reply))
    finally:
        await _close(reply)


async def test_a_new_chats_folder_is_made_by_its_first_tool_and_a_failure_is_that_tools_error(
    make_server: Callable[..., Server],
) -> None:
    """A new chat's folder is made only when a tool is about to run in it: a chat without tools
    leaves none behind; when it cannot be made, the tool's result says so (the model reads it)
    and the chat ends normally (docs/reference/core.md#workspace)."""
    async with FakeUpstream() as up:
        listing = _tool_call("list_dir", {"path": "."})
        replies = [OPENAI.reply("First."), OPENAI.reply("No tools.")]
        replies += [listing, OPENAI.reply("Could not look."), listing, OPENAI.reply("Looked.")]
        up.replies(OPENAI.chat_path, replies)
        server = _server(make_server, up)
        folders = server.home / "workspaces"
        assert (await _chat_session(server, "one"))[1] == "First."  # its parent is made for it
        plain, said = await _chat_session(server, "two")
        assert said == "No tools." and not (folders / plain).exists()

        shutil.rmtree(folders)
        folders.write_text("not a folder")  # every new session's folder fails to be made
        broken, said = await _chat_session(server, "three")
        assert said == "Could not look."
        assert "workspace folder" in _tool_result(up, 3) and "cannot be made" in _tool_result(up, 3)
        with sqlite3.connect(server.home / "hermes.sqlite3") as db:
            stored = db.execute("SELECT count(*) FROM messages WHERE session_id = ?", (broken,)).fetchone()
        assert stored == (4,)  # the prompt, the call, its error and the answer

        folders.unlink()
        looked, said = await _chat_session(server, "four")
        assert said == "Looked." and (folders / looked).is_dir()
        assert "cannot be made" not in _tool_result(up, 5)
        assert "exception was never retrieved" not in "".join(server.log)
