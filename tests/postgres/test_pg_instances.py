"""Two ``hermes api`` instances on one PostgreSQL database share sessions: a conversation moves
between them turn by turn, and while one runs a turn the other refuses the session (the lease)."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import openai
import psycopg

from tests.api.api_helpers import Server, start_server
from tests.timing import eventually, scaled

CONFIG = """
[agent]
provider_retries = 0
[titles]
refine = false
[storage]
backend = "postgres"
"""
KEY = "hk_" + secrets.token_urlsafe(32)


def chat(server: Server, messages: list[dict[str, str]], session_id: str) -> str:
    sdk = openai.OpenAI(base_url=f"{server.base}/v1", api_key=KEY, max_retries=0, timeout=scaled(30))
    done = sdk.chat.completions.create(
        model="hermes-agent", messages=messages, extra_headers={"X-Hermes-Session-Id": session_id}
    )
    return str(done.choices[0].message.content)


async def stored(dsn: str, session_id: str) -> list[tuple[str, str, bool]]:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT role, content, active FROM hermes_messages WHERE session_id = %s ORDER BY position, id",
            (session_id,),
        )
        return [(role, content, active) for role, content, active in await cur.fetchall()]


async def test_a_conversation_moves_between_instances_turn_by_turn(tmp_path: Path, pg_dsn: str) -> None:
    env = {"HERMES_POSTGRES_DSN": pg_dsn, "API_SERVER_KEY": KEY}
    a = start_server(tmp_path / "a", config=CONFIG, env=env)
    b = start_server(tmp_path / "b", config=CONFIG, env=env)
    try:
        history: list[dict[str, str]] = []
        for turn, server in enumerate([a, b, a, b]):
            history.append({"role": "user", "content": f"turn {turn}"})
            reply = await asyncio.to_thread(chat, server, history, "shared-1")
            assert reply == f"You said: turn {turn}"
            history.append({"role": "assistant", "content": reply})

        rows = await stored(pg_dsn, "shared-1")
        # Each instance read what the other wrote: the body matched the stored history every time,
        # so nothing was archived or written twice.
        assert rows == [(m["role"], m["content"], True) for m in history]
    finally:
        a.stop()
        b.stop()


async def test_while_one_instance_runs_a_turn_the_other_refuses_the_session(
    tmp_path: Path, pg_dsn: str
) -> None:
    env = {"HERMES_POSTGRES_DSN": pg_dsn, "API_SERVER_KEY": KEY}
    a = start_server(tmp_path / "a", config=CONFIG, env=env)
    b = start_server(tmp_path / "b", config=CONFIG, env=env)
    try:
        slow = asyncio.create_task(
            asyncio.to_thread(
                chat, a, [{"role": "user", "content": "slow [[tokens 40]] [[delay 100]]"}], "busy-1"
            )
        )

        async def a_holds_the_lease() -> bool:
            async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
                cur = await conn.execute(
                    "SELECT count(*) FROM hermes_leases WHERE session_id = 'busy-1' AND owner IS NOT NULL"
                )
                row = await cur.fetchone()
                return bool(row and row[0])

        await eventually(a_holds_the_lease, what="instance a holding the session's lease")

        def refused() -> openai.APIStatusError:
            try:
                chat(b, [{"role": "user", "content": "me too"}], "busy-1")
            except openai.APIStatusError as exc:
                return exc
            raise AssertionError("instance b ran a turn on a session instance a was writing")

        error = await asyncio.to_thread(refused)
        assert error.status_code == 409 and error.response.json()["error"]["code"] == "session_in_use"

        assert (await slow).startswith("t0 t1")
        # Released after the turn: b may continue the session now.
        history = [
            {"role": "user", "content": "slow [[tokens 40]] [[delay 100]]"},
            {"role": "assistant", "content": await slow},
            {"role": "user", "content": "my turn"},
        ]
        assert await asyncio.to_thread(chat, b, history, "busy-1") == "You said: my turn"
    finally:
        a.stop()
        b.stop()


async def test_a_session_whose_folder_is_on_another_host_continues_in_this_instances_folder(
    tmp_path: Path, pg_dsn: str
) -> None:
    """Instances on different machines: the session's folder, made by the instance that started it,
    does not exist where the next turn lands. That instance gives the session a folder of its own
    instead of writing into a path of the other machine."""
    import shutil

    env = {"HERMES_POSTGRES_DSN": pg_dsn, "API_SERVER_KEY": KEY}
    a = start_server(tmp_path / "a", config=CONFIG, env=env)
    b = start_server(tmp_path / "b", config=CONFIG, env=env)
    try:
        write = '[[tool write_file {"path": "note.txt", "content": "from a"}]] write'
        assert "Created note.txt" in await asyncio.to_thread(
            chat, a, [{"role": "user", "content": write}], "far-1"
        )
        first = tmp_path / "a" / "workspaces" / "far-1"
        assert (first / "note.txt").read_text() == "from a"
        shutil.rmtree(first)  # as seen from another machine: that folder is not there

        write_b = '[[tool write_file {"path": "note.txt", "content": "from b"}]] again'
        history = [{"role": "user", "content": write}, {"role": "assistant", "content": "Done"}]
        await asyncio.to_thread(chat, b, [*history, {"role": "user", "content": write_b}], "far-1")
        here = tmp_path / "b" / "workspaces" / "far-1"
        assert (here / "note.txt").read_text() == "from b"
        assert not first.exists()  # nothing was written into the other machine's path
        async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
            cur = await conn.execute("SELECT cwd FROM hermes_sessions WHERE id = 'far-1'")
            assert (await cur.fetchone()) == (str(here.resolve()),)
        assert "is not on this instance; it continues in" in "".join(b.log)
    finally:
        a.stop()
        b.stop()


def chat_by_history(server: Server, messages: list[dict[str, str]]) -> tuple[str, str]:
    """Chat without a session header (the history picks the session); return (text, session id)."""
    sdk = openai.OpenAI(base_url=f"{server.base}/v1", api_key=KEY, max_retries=0, timeout=scaled(30))
    raw = sdk.chat.completions.with_raw_response.create(model="mock:history", messages=messages)  # type: ignore[arg-type]
    return raw.parse().choices[0].message.content or "", raw.headers["X-Hermes-Session-Id"]


async def test_instances_share_which_session_a_chat_history_continues(tmp_path: Path, pg_dsn: str) -> None:
    env = {"HERMES_POSTGRES_DSN": pg_dsn, "API_SERVER_KEY": KEY}
    a = start_server(tmp_path / "a", config=CONFIG, env=env)
    b = start_server(tmp_path / "b", config=CONFIG, env=env)
    try:
        opener = {"role": "user", "content": 'hi [[tool terminal {"command": "pwd"}]]'}
        # Two chats open with the same words, one on each instance; each answer names its folder.
        a_said, a_id = await asyncio.to_thread(chat_by_history, a, [opener])
        b_said, b_id = await asyncio.to_thread(chat_by_history, b, [opener])
        assert a_id != b_id and a_said != b_said
        # Each continues on the other instance, which finds its session in the shared index.
        a_next = [opener, {"role": "assistant", "content": a_said}, {"role": "user", "content": "A again"}]
        b_next = [opener, {"role": "assistant", "content": b_said}, {"role": "user", "content": "B again"}]
        assert await asyncio.to_thread(chat_by_history, b, a_next) == ("Turns: hi | A again", a_id)
        assert await asyncio.to_thread(chat_by_history, a, b_next) == ("Turns: hi | B again", b_id)
        a_rows, b_rows = await stored(pg_dsn, a_id), await stored(pg_dsn, b_id)
        assert [r[1] for r in a_rows if r[0] == "user"] == [opener["content"], "A again"]
        assert [r[1] for r in b_rows if r[0] == "user"] == [opener["content"], "B again"]
        assert all(r[2] for r in a_rows + b_rows)  # nothing archived
    finally:
        a.stop()
        b.stop()
