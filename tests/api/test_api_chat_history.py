"""Without a session or chat id header, a chat's history picks its session: a first turn always
opens a new one, a later turn continues the session whose transcript is the body's history
(docs/reference/api-server.md#chat-sessions, docs/protocols/api-server.md#open-webui).

Driven through the ``openai`` SDK against a real ``hermes api`` with the mock model. The opener
that two chats share asks for ``pwd``, so each chat's first reply names its own folder: two
conversations with one opener differ from their first answer on, as with a real model.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from typing import Any

import openai
import pytest

from tests.api.api_helpers import Server
from tests.timing import scaled

OPENER = 'hi [[tool terminal {"command": "pwd"}]]'
WRITE = 'note please [[tool write_file {"path": "note.txt", "content": "private note of A"}]]'
READ = 'look [[tool read_file {"path": "note.txt"}]]'
Message = dict[str, str]


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": text}


async def say(
    server: Server, *messages: Message, who: str | None = None, stream: bool = False
) -> tuple[str, str]:
    """Send a chat as the SDK does; return (reply text, session id)."""
    client = openai.AsyncOpenAI(
        base_url=f"{server.base}/v1", api_key=server.key, max_retries=0, timeout=scaled(60)
    )
    headers = {"X-OpenWebUI-User-Id": who} if who else {}
    body: dict[str, Any] = {"model": "mock:history", "messages": list(messages), "extra_headers": headers}
    async with client:
        if not stream:
            raw = await client.chat.completions.with_raw_response.create(**body)
            return raw.parse().choices[0].message.content or "", raw.headers["X-Hermes-Session-Id"]
        async with client.chat.completions.with_streaming_response.create(stream=True, **body) as reply:
            text = [c.choices[0].delta.content or "" async for c in await reply.parse() if c.choices]
            return "".join(text), reply.headers["X-Hermes-Session-Id"]


def rows(server: Server, session_id: str) -> list[tuple[str, str, int, str | None]]:
    """Return (role, content, active, archived_reason) of a session's user and assistant rows."""
    with sqlite3.connect(server.home / "hermes.sqlite3") as db:
        return db.execute(
            "SELECT role, content, active, archived_reason FROM messages"
            " WHERE session_id = ? AND role IN ('user', 'assistant') AND content != ''"
            " ORDER BY position, id",
            (session_id,),
        ).fetchall()


def active(server: Server, session_id: str) -> list[tuple[str, str]]:
    return [(role, text) for role, text, on, _ in rows(server, session_id) if on]


def folder_of(server: Server, session_id: str) -> str:
    return str(server.home / "workspaces" / session_id)


async def open_two(server: Server, concurrent: bool, a: str | None, b: str | None) -> tuple[Any, Any]:
    """Open two chats with OPENER; return ((reply, session id) of A, of B)."""
    if concurrent:
        return tuple(await asyncio.gather(say(server, user(OPENER), who=a), say(server, user(OPENER), who=b)))
    return await say(server, user(OPENER), who=a), await say(server, user(OPENER), who=b)


@pytest.mark.parametrize("concurrent", [False, True], ids=["sequential", "concurrent"])
@pytest.mark.parametrize("users", [(None, None), ("user-ada", "user-bob")], ids=["one-user", "two-users"])
async def test_chats_with_one_opener_never_share_a_session_or_a_folder(
    server: Server, concurrent: bool, users: tuple[str | None, str | None]
) -> None:
    a, b = users
    (a_said, a_id), (b_said, b_id) = await open_two(server, concurrent, a, b)
    assert a_id != b_id
    assert a_said == f"Done: {folder_of(server, a_id)}" and b_said == f"Done: {folder_of(server, b_id)}"
    # A (streamed) writes a note in its folder; B (JSON) looks for it in its own and finds none.
    written, a_again = await say(server, user(OPENER), assistant(a_said), user(WRITE), who=a, stream=True)
    assert written.startswith("Done: ") and a_again == a_id
    read, b_again = await say(server, user(OPENER), assistant(b_said), user(READ), who=b)
    assert b_again == b_id and "private note of A" not in read
    assert (server.home / "workspaces" / a_id / "note.txt").read_text() == "private note of A"
    assert not (server.home / "workspaces" / b_id / "note.txt").exists()
    # Each session holds its own chat's turns only, and nothing was archived.
    a_rows, b_rows = rows(server, a_id), rows(server, b_id)
    assert [r[1] for r in a_rows] == [OPENER, a_said, WRITE, written]
    assert [r[1] for r in b_rows] == [OPENER, b_said, READ, read]
    assert all(r[2] for r in a_rows + b_rows)


async def test_a_first_turn_always_opens_a_new_session(server: Server) -> None:
    ids = {(await say(server, user("hi")))[1] for _ in range(3)}
    ids |= {(await say(server, user("hi"), who="user-ada"))[1] for _ in range(2)}
    assert len(ids) == 5


async def test_edits_and_regenerates_reconcile_in_the_chats_own_session(server: Server) -> None:
    (a_said, a_id), (b_said, b_id) = await open_two(server, False, None, None)
    a_chat = [user(OPENER), assistant(a_said)]
    for text in ("second", "third"):
        said, same = await say(server, *a_chat, user(text))
        assert same == a_id
        a_chat += [user(text), assistant(said)]
    b_next, b_same = await say(server, user(OPENER), assistant(b_said), user("b's second"))
    assert b_same == b_id and b_next == "Turns: hi | b's second"
    # Regenerate A's last reply: the history before it is sent again.
    again, same = await say(server, *a_chat[:-1])
    assert same == a_id and again == "Turns: hi | second | third"
    # Edit A's second message: the shorter history still finds A's session; the rows it replaces
    # are archived there, B's session is untouched.
    edited, same = await say(server, *a_chat[:2], user("second, edited"))
    assert same == a_id and edited == "Turns: hi | second, edited"
    assert active(server, a_id) == [
        ("user", OPENER),
        ("assistant", a_said),
        ("user", "second, edited"),
        ("assistant", edited),
    ]
    archived = [(r[1], r[3]) for r in rows(server, a_id) if not r[2]]
    assert ("second", "reconcile") in archived and ("third", "reconcile") in archived
    assert len([t for t, _ in archived if t == "third"]) == 2  # the regenerated one and its answer
    assert all(r[2] for r in rows(server, b_id))
    assert active(server, b_id)[-1] == ("assistant", "Turns: hi | b's second")


async def test_a_history_no_turn_recorded_opens_a_new_session_seeded_from_the_body(server: Server) -> None:
    opener = f"tell me {uuid.uuid4().hex[:6]}"
    said, first = await say(server, user(opener))
    # The client says the answer was something this server never answered: the body is the truth,
    # in a session of its own; the chat that did get that answer keeps its rows.
    other, seeded = await say(server, user(opener), assistant("an answer from elsewhere"), user("go on"))
    assert seeded != first and other == f"Turns: {opener} | go on"
    assert active(server, seeded) == [
        ("user", opener),
        ("assistant", "an answer from elsewhere"),
        ("user", "go on"),
        ("assistant", other),
    ]
    assert rows(server, first) == [("user", opener, 1, None), ("assistant", said, 1, None)]
    # Its earlier turns were recorded too: a regenerate of the seeded chat's reply stays in it.
    again, same = await say(server, user(opener), assistant("an answer from elsewhere"), user("go on"))
    assert same == seeded and again == other


async def test_identical_histories_continue_a_session_at_that_point_and_archive_nothing(
    server: Server,
) -> None:
    # Two chats whose every word is the same cannot be told apart without a chat id: a later turn
    # continues the session most recently recorded at that point, never one that moved past it.
    opener = f"identical {uuid.uuid4().hex[:6]}"
    (a_said, a_id), (b_said, b_id) = await say(server, user(opener)), await say(server, user(opener))
    assert a_id != b_id and a_said == b_said
    history = [user(opener), assistant(a_said)]
    from_a, first = await say(server, *history, user("from A"))
    from_b, second = await say(server, *history, user("from B"))
    assert {first, second} == {a_id, b_id}
    assert from_a == f"Turns: {opener} | from A" and from_b == f"Turns: {opener} | from B"
    # An edit back to that point, where both sessions have moved on: a new session from the body.
    edited, third = await say(server, *history, user("from A, edited"))
    assert third not in {a_id, b_id} and edited == f"Turns: {opener} | from A, edited"
    for session_id in (a_id, b_id):
        assert all(r[2] for r in rows(server, session_id))


async def test_a_frontend_user_id_keeps_the_same_history_of_two_users_apart(server: Server) -> None:
    opener = f"shared words {uuid.uuid4().hex[:6]}"
    (said, ada), (_, bob) = (
        await say(server, user(opener), who="ada"),
        await say(server, user(opener), who="bob"),
    )
    history = [user(opener), assistant(said)]
    assert (await say(server, *history, user("next"), who="ada"))[1] == ada
    assert (await say(server, *history, user("next"), who="bob"))[1] == bob
