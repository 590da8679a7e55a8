"""A background response whose instance was killed (``kill -9``) is settled by another instance
sharing the PostgreSQL records, exactly once: ``failed`` with ``error.code`` ``owner_lost`` once
the owner's lease went stale, the same object on every instance, and the stream resumed there
from the client's ``starting_after`` with no gap and no repeat
(docs/reference/api-server.md#background-responses). Driven with the official ``openai`` SDK.
The same scenario with the Redis run bus is in ``tests/redis``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.api.api_helpers import Server, start_server
from tests.timing import eventually, scaled

KEY = "hk_" + secrets.token_urlsafe(32)
#: About 10 s of output: the owner is killed long before it ends.
SLOW = "[[tokens 400]] [[delay 25]] go"
CONFIG = """
[storage]
backend = "postgres"
[agent]
provider_retries = 0
[titles]
refine = false
[bus]
heartbeat_s = 0.5
owner_grace_s = 3
"""


def client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base}/v1", api_key=KEY, max_retries=0, timeout=scaled(60))


def take(stream: Any, count: int | None = None, *, close: bool = True) -> list[Any]:
    got = []
    for event in stream:
        got.append(event)
        if count is not None and len(got) >= count:
            break
    if close:
        stream.close()
    return got


def numbers(events: list[Any]) -> list[int]:
    return [int(e.sequence_number) for e in events]


async def owner_killed_mid_turn(start: Callable[[str], Server]) -> None:
    """Run the scenario on instances made by ``start(name)`` (sharing the records)."""
    a, b = start("a"), start("b")
    servers = [a, b]
    try:
        stream = await asyncio.to_thread(
            client(a).responses.create, model="hermes-agent", input=SLOW, background=True, stream=True
        )
        before = await asyncio.to_thread(lambda: take(stream, 40, close=False))
        assert numbers(before) == list(range(40))
        response_id = before[0].response.id
        sdk = client(b)
        running = await asyncio.to_thread(sdk.responses.retrieve, response_id)
        assert running.status in ("queued", "in_progress")  # its owner is alive: left alone
        # While it runs on a, b streams it too (read back from the event log): the same events.
        early = await asyncio.to_thread(
            lambda: take(sdk.responses.retrieve(response_id, stream=True, starting_after=5), 10)
        )
        assert [e.model_dump() for e in early] == [e.model_dump() for e in before[6:16]]
        cursor = numbers(before)[-1]
        a.proc.kill()  # kill -9 mid-turn
        a.proc.wait(10)
        # A client reconnecting at once to b: its stream waits for the settle, then ends.
        reconnected = asyncio.create_task(
            asyncio.to_thread(
                lambda: take(client(b).responses.retrieve(response_id, stream=True, starting_after=cursor))
            )
        )
        c = start("c")  # started after the owner died
        servers.append(c)

        answers: list[Any] = []

        async def settled(server: Server) -> Any:
            found = await asyncio.to_thread(client(server).responses.retrieve, response_id)
            answers.append(found)
            return found if found.status not in ("queued", "in_progress") else None

        # b and c ask at once, over and over: exactly one of them settles it, both tell the same.
        ended = await eventually(
            lambda: _both(settled(b), settled(c)), timeout=scaled(30), interval=0.1, what="the settle"
        )
        done = ended[0]
        assert done.status == "failed" and done.error is not None and done.error.code == "owner_lost"
        assert "stopped answering" in done.error.message
        assert ended[1].model_dump() == done.model_dump()
        terminal = [x.model_dump() for x in answers if x.status not in ("queued", "in_progress")]
        assert terminal and all(t == done.model_dump() for t in terminal)
        again = await asyncio.to_thread(client(c).responses.retrieve, response_id)
        assert again.model_dump() == done.model_dump()

        rest = await asyncio.to_thread(
            lambda: take(sdk.responses.retrieve(response_id, stream=True, starting_after=cursor))
        )
        assert numbers(rest) == list(range(cursor + 1, cursor + 1 + len(rest))), numbers(rest)
        end = rest[-1]
        assert end.type == "response.failed" and end.response.model_dump() == done.model_dump()
        assert [e.model_dump() for e in await reconnected] == [e.model_dump() for e in rest]
        text = "".join(e.delta for e in before + rest if e.type == "response.output_text.delta")
        assert text and done.output[0].content[0].text == text
        # The whole stream on the instance started after the kill: the events the client saw live,
        # then the rest, one terminal event.
        whole = await asyncio.to_thread(lambda: take(client(c).responses.retrieve(response_id, stream=True)))
        assert [e.model_dump() for e in whole[:40]] == [e.model_dump() for e in before]
        assert [e.model_dump() for e in whole[40:]] == [e.model_dump() for e in rest]
        assert [e.type for e in whole].count("response.failed") == 1
        # It ended: a cancel is refused as OpenAI refuses one of a failed response.
        with pytest.raises(openai.BadRequestError) as refused:
            await asyncio.to_thread(sdk.responses.cancel, response_id)
        assert refused.value.status_code == 400 and "Cannot cancel a failed response." in str(refused.value)
        # The next turn, chained to it, works on the surviving instance.
        nxt = await asyncio.to_thread(
            sdk.responses.create, model="hermes-agent", input="again", previous_response_id=response_id
        )
        assert nxt.status == "completed"
    finally:
        for server in servers:
            if server.proc.poll() is None:
                server.stop()


async def _both(*asks: Any) -> list[Any] | None:
    got = await asyncio.gather(*asks)
    return list(got) if all(x is not None for x in got) else None


async def test_a_killed_owners_background_response_is_settled_by_another_instance(
    tmp_path: Path, pg_dsn: str
) -> None:
    env = {"HERMES_POSTGRES_DSN": pg_dsn, "API_SERVER_KEY": KEY}
    await owner_killed_mid_turn(lambda name: start_server(tmp_path / name, config=CONFIG, env=env))


async def test_a_stalled_owner_takes_the_ending_another_instance_settled(tmp_path: Path, pg_dsn: str) -> None:
    """An owner frozen past the grace period (``SIGSTOP``) finds its response settled elsewhere
    when it wakes: its own reader's stream ends with that same ``owner_lost`` ending, numbered
    without a gap, and nothing it does afterwards changes the stored object."""
    env = {"HERMES_POSTGRES_DSN": pg_dsn, "API_SERVER_KEY": KEY}
    a = start_server(tmp_path / "a", config=CONFIG, env=env)
    b = start_server(tmp_path / "b", config=CONFIG, env=env)
    try:
        stream = await asyncio.to_thread(
            client(a).responses.create, model="hermes-agent", input=SLOW, background=True, stream=True
        )
        before = await asyncio.to_thread(lambda: take(stream, 20, close=False))
        response_id = before[0].response.id
        os.kill(a.proc.pid, signal.SIGSTOP)
        try:

            async def settled() -> Any:
                found = await asyncio.to_thread(client(b).responses.retrieve, response_id)
                return found if found.status not in ("queued", "in_progress") else None

            ended = await eventually(settled, timeout=scaled(30), interval=0.1, what="the settle on b")
        finally:
            os.kill(a.proc.pid, signal.SIGCONT)
        assert ended.status == "failed" and ended.error.code == "owner_lost"
        # The owner's reader goes on: the rest, then the ending b settled, with no gap.
        rest = await asyncio.to_thread(lambda: take(stream))
        seen = before + rest
        assert numbers(seen) == list(range(len(seen))), numbers(seen)
        assert rest[-1].type == "response.failed"
        assert rest[-1].response.model_dump() == ended.model_dump()
        assert [e.type for e in seen].count("response.failed") == 1
        whole = await asyncio.to_thread(lambda: take(client(b).responses.retrieve(response_id, stream=True)))
        assert [e.model_dump() for e in whole] == [e.model_dump() for e in seen]
        # Both instances tell the one ending, also once the owner's turn is over.
        for server in (a, b):
            told = await asyncio.to_thread(client(server).responses.retrieve, response_id)
            assert told.model_dump() == ended.model_dump()
        nxt = await asyncio.to_thread(
            client(a).responses.create, model="hermes-agent", input="again", previous_response_id=response_id
        )
        assert nxt.status == "completed"
        # The owner learnt it from its lease (it did not write an ending of its own).
        assert any("settled by another instance" in line for line in a.log), a.log[-20:]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(a.proc.pid, signal.SIGCONT)
        a.stop()
        b.stop()


async def test_a_background_response_is_cancelled_from_another_instance(tmp_path: Path, pg_dsn: str) -> None:
    """``POST /v1/responses/{id}/cancel`` on an instance that does not run the response reaches
    its owner through the lease: the turn stops there and every instance tells ``cancelled``."""
    env = {"HERMES_POSTGRES_DSN": pg_dsn, "API_SERVER_KEY": KEY}
    a = start_server(tmp_path / "a", config=CONFIG, env=env)
    b = start_server(tmp_path / "b", config=CONFIG, env=env)
    try:
        stream = await asyncio.to_thread(
            client(a).responses.create, model="hermes-agent", input=SLOW, background=True, stream=True
        )
        before = await asyncio.to_thread(lambda: take(stream, 10, close=False))
        response_id = before[0].response.id
        cancelled = await asyncio.to_thread(client(b).responses.cancel, response_id)
        assert cancelled.status == "cancelled"
        rest = await asyncio.to_thread(lambda: take(stream))
        seen = before + rest
        assert numbers(seen) == list(range(len(seen)))
        assert rest[-1].type == "response.incomplete" and rest[-1].response.status == "cancelled"
        for server in (a, b):
            told = await asyncio.to_thread(client(server).responses.retrieve, response_id)
            assert told.model_dump() == cancelled.model_dump()
        whole = await asyncio.to_thread(lambda: take(client(b).responses.retrieve(response_id, stream=True)))
        assert [e.type for e in whole] == [e.type for e in seen], (
            [e.type for e in whole],
            [e.type for e in seen],
        )
        assert [e.model_dump() for e in whole] == [e.model_dump() for e in seen]
        again = await asyncio.to_thread(client(b).responses.cancel, response_id)
        assert again.status == "cancelled"
    finally:
        a.stop()
        b.stop()
