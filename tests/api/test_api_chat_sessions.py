"""Which session a chat request lands in: derived ids per principal and frontend user, a frontend's
chat id header, reconcile at the head of the queue, task prompts never stored
(docs/reference/api-server.md#chat-sessions, docs/protocols/api-server.md#open-webui)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from tests.api.api_helpers import Server, assert_error, call

TASK = "### Task:\nGenerate a concise, 3-5 word title for the chat.\n### Chat History:\nUSER: hi"
WRITE = '[[tool write_file {"path": "note.txt", "content": "private note of A"}]]'
READ = '[[tool read_file {"path": "note.txt"}]]'


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


async def ask(
    server: Server,
    *messages: Mapping[str, str],
    headers: Mapping[str, str] | None = None,
    key: str | None = None,
    model: str = "mock:history",
) -> tuple[str, str]:
    """Send a non-streamed chat; return (reply text, session id)."""
    body: dict[str, Any] = {"model": model, "messages": list(messages)}
    auth = f"Bearer {key}" if key else True
    reply = await call(server, "POST", "/v1/chat/completions", body, headers=headers, auth=auth)
    assert reply.status == 200, reply.text
    return reply.json["choices"][0]["message"]["content"], reply.headers["X-Hermes-Session-Id"]


async def test_concurrent_chats_with_one_opener_each_see_only_their_own_transcript(server: Server) -> None:
    # Both arrive while neither is answered: the second waits in the queue behind the first and is
    # reconciled with the history the first left when it reaches the head.
    slow = ask(server, user("[[delay 40]] good morning"))
    first_task = asyncio.ensure_future(slow)
    await asyncio.sleep(0)
    second = await ask(server, user("[[delay 40]] good morning"))
    first = await first_task
    assert first[0] == "Turns: good morning"
    assert second[0] == "Turns: good morning"  # not "good morning | good morning"


async def test_principals_and_frontend_users_never_share_a_derived_session(
    make_server: Callable[..., Server],
) -> None:
    keys = ["hk_first-principal-key-0001", "hk_second-principal-key-0002"]
    server = make_server(f"[api_server]\nkeys = {keys!r}\n")
    # One key: the same words continue the same session.
    said, one = await ask(server, user("hi"), key=keys[0], model="mock:echo")
    history = [user("hi"), assistant(said), user("more")]
    assert re.fullmatch(r"api-[0-9a-f]{16}", one)
    assert (await ask(server, *history, key=keys[0], model="mock:echo"))[1] == one
    # Another principal with the same words, or another frontend user behind one key: another
    # session and folder.
    _, other_key = await ask(server, user("hi"), key=keys[1], model="mock:echo")
    assert (await ask(server, *history, key=keys[1], model="mock:echo"))[1] == other_key
    alice = {"X-OpenWebUI-User-Id": "user-alice"}
    bob = {"X-OpenWebUI-User-Id": "user-bob"}
    as_alice, as_bob = await both_open_with_hi(server, alice, bob, key=keys[0])
    assert len({one, other_key, as_alice, as_bob}) == 4


async def both_open_with_hi(
    server: Server, a: Mapping[str, str], b: Mapping[str, str], key: str | None = None
) -> tuple[str, str]:
    """Open two chats with "hi"; A writes a note, then B looks for it. Return both session ids."""
    hi_a, a_id = await ask(server, user("hi"), headers=a, key=key)
    hi_b, b_id = await ask(server, user("hi"), headers=b, key=key)
    written, _ = await ask(server, user("hi"), assistant(hi_a), user(WRITE), headers=a, key=key)
    assert written.startswith("Done: "), written
    read, _ = await ask(server, user("hi"), assistant(hi_b), user(READ), headers=b, key=key)
    assert a_id != b_id
    assert "private note of A" not in read
    assert not (server.home / "workspaces" / b_id / "note.txt").exists()
    assert (server.home / "workspaces" / a_id / "note.txt").read_text() == "private note of A"
    return a_id, b_id


async def test_a_frontend_chat_id_header_seeds_one_session_per_chat_and_keeps_reconcile(
    server: Server,
) -> None:
    chat_a = {"X-OpenWebUI-Chat-Id": "0d9c7a52-chat-a", "X-OpenWebUI-User-Id": "user-1"}
    chat_b = {"X-OpenWebUI-Chat-Id": "71e0b6c3-chat-b", "X-OpenWebUI-User-Id": "user-1"}
    a_id, _ = await both_open_with_hi(server, chat_a, chat_b)
    assert re.fullmatch(r"api-chat-[0-9a-f]{16}", a_id)
    # The same chat continues its session; the body stays the truth (an edit is reconciled).
    said = "Turns: hi"
    reply, again = await ask(server, user("hi"), assistant(said), user("second"), headers=chat_a)
    assert again == a_id and reply == "Turns: hi | second"
    edited, _ = await ask(server, user("hi"), assistant(said), user("second, edited"), headers=chat_a)
    assert edited == "Turns: hi | second, edited"


async def test_a_malformed_frontend_header_is_a_400(server: Server) -> None:
    reply = await call(
        server,
        "POST",
        "/v1/chat/completions",
        {"messages": [user("hi")]},
        headers={"X-OpenWebUI-Chat-Id": "x" * 300},
    )
    err = assert_error(reply, 400, "invalid_value")
    assert err["param"] == "X-OpenWebUI-Chat-Id"


async def test_the_frontend_headers_are_configurable(make_server: Callable[..., Server]) -> None:
    server = make_server(
        '[api_server]\nchat_id_headers = ["X-Frontend-Conversation"]\nuser_id_headers = []\n'
    )
    said, plain = await ask(server, user("hi"), headers={"X-OpenWebUI-Chat-Id": "ignored-now"})
    _, seeded = await ask(server, user("hi"), headers={"X-Frontend-Conversation": "conv-7"})
    assert re.fullmatch(r"api-[0-9a-f]{16}", plain) and seeded.startswith("api-chat-")
    history = [user("hi"), assistant(said), user("next")]
    _, other_user = await ask(server, *history, headers={"X-OpenWebUI-User-Id": "someone"})
    assert other_user == plain  # user ids are not read any more


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Hermes-Session-Id": "pinned-chat"},
        {"X-OpenWebUI-Chat-Id": "pinned-chat", "X-OpenWebUI-User-Id": "user-1"},
    ],
    ids=["session-header", "frontend-chat-id"],
)
async def test_task_prompts_are_never_stored_whatever_session_they_name(
    server: Server, headers: dict[str, str]
) -> None:
    _, session_id = await ask(server, user("one"), headers=headers)
    reply = await call(
        server, "POST", "/v1/chat/completions", {"messages": [user("one"), user(TASK)]}, headers=headers
    )
    assert reply.status == 200, reply.text
    assert reply.json["hermes"]["meta_request"] is True
    history = [user("one"), assistant("Turns: one"), user("two")]
    answer, again = await ask(server, *history, headers=headers)
    assert again == session_id
    assert answer == "Turns: one | two"


async def test_one_idempotency_key_for_two_frontend_chats_is_a_conflict(server: Server) -> None:
    body = {"messages": [user("hi")]}
    first = {"X-OpenWebUI-Chat-Id": "idem-chat-1", "Idempotency-Key": "idem-key-7"}
    second = {"X-OpenWebUI-Chat-Id": "idem-chat-2", "Idempotency-Key": "idem-key-7"}
    assert (await call(server, "POST", "/v1/chat/completions", body, headers=first)).status == 200
    replay = await call(server, "POST", "/v1/chat/completions", body, headers=first)
    assert replay.headers.get("Idempotency-Replayed") == "true"
    assert_error(
        await call(server, "POST", "/v1/chat/completions", body, headers=second),
        409,
        "idempotency_key_conflict",
    )
