"""Three ``hermes api`` instances behind nginx (round robin) on one Redis bus and one database:
through nginx and the ``openai`` SDK a run streams, resumes, takes a steer, an approval and a stop
whichever instance each request lands on; a session continues across instances; ``kill -9`` of a
run's owner ends its run with ``owner_lost`` and the session is usable again."""

from __future__ import annotations

import asyncio
import secrets
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.api.api_helpers import Server, assert_error, call, start_server
from tests.nginx_front import start_nginx
from tests.redis.conftest import Shared
from tests.redis.test_redis_instances import Events, config, start_run, wait_status
from tests.services import nginx_binary, postgres_dsn
from tests.timing import eventually, scaled

KEY = "hk_" + secrets.token_urlsafe(32)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Front:
    """nginx in front of the instances; looks like one ``Server`` to the helpers."""

    def __init__(self, tmp: Path, backends: list[Server]) -> None:
        self.port = free_port()
        # The configuration of docs/deploy.md, as printed there.
        self.proc = start_nginx(nginx_binary(), tmp, [b.port for b in backends], self.port)
        self.key = KEY
        self.base = f"http://127.0.0.1:{self.port}"

    def auth(self, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key or self.key}"}

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)


@pytest.fixture
def cluster(tmp_path: Path, shared: Shared) -> Iterator[tuple[Any, list[Server]]]:
    env = {**shared.env, "API_SERVER_KEY": KEY}
    backends = [start_server(tmp_path / f"i{i}", config=config(shared), env=env) for i in range(3)]
    front = Front(tmp_path / "nginx", backends)
    try:
        yield front, backends
    finally:
        front.stop()
        for b in backends:
            b.stop()


def sdk(front: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{front.base}/v1", api_key=KEY, max_retries=0, timeout=scaled(30))


async def listening(front: Any) -> None:
    async def up() -> bool:
        try:
            return (await call(front, "GET", "/health")).status == 200
        except OSError:
            return False

    await eventually(up, timeout=20, interval=0.05, what="nginx listening")


async def pids_behind(front: Any) -> set[int]:
    seen = set()
    for _ in range(6):
        reply = await call(front, "GET", "/health/detailed")
        assert reply.status == 200, reply.text
        seen.add(int(reply.json["pid"]))
    return seen


async def test_through_nginx_a_run_streams_resumes_and_takes_steer_approval_stop(
    cluster: tuple[Any, list[Server]],
) -> None:
    front, backends = cluster
    await listening(front)
    assert await pids_behind(front) == {b.proc.pid for b in backends}  # round robin over all three

    run_id = await start_run(front, "[[tokens 400]] [[delay 25]] go")
    async with Events(front, run_id) as stream:
        seen = await stream.until("message.delta")
    async with Events(front, run_id, last_id=seen[-1]["id"]) as resumed:
        again = await resumed.next()
        assert again is not None and again["id"] == seen[-1]["id"] + 1
        for _ in range(3):  # three posts: at least two land on instances that do not own the run
            steer = await call(front, "POST", f"/v1/runs/{run_id}/steer", {"input": "short"})
            assert steer.status == 200, steer.text
        stop = await call(front, "POST", f"/v1/runs/{run_id}/stop")
        assert stop.status == 200 and stop.json["status"] in ("stopping", "cancelled"), stop.text
        names = [f["data"]["event"] for f in await resumed.until("run.cancelled")]
        assert names.count("run.steered") == 3

    guarded = await start_run(front, '[[tool terminal {"command":"hermes-guard-test"}]] please')
    await wait_status(front, guarded, "waiting_for_approval")
    answer = await call(front, "POST", f"/v1/runs/{guarded}/approval", {"choice": "deny"})
    assert answer.status == 200 and answer.json["resolved"] == 1, answer.text
    assert (await wait_status(front, guarded, "completed"))["status"] == "completed"

    # A conversation continues across instances (one per turn, round robin) through the SDK.
    history: list[dict[str, str]] = []
    for turn in range(3):
        history.append({"role": "user", "content": f"turn {turn}"})

        def chat(messages: list[dict[str, str]]) -> str:
            done = sdk(front).chat.completions.create(
                model="hermes-agent", messages=messages, extra_headers={"X-Hermes-Session-Id": "nginx-1"}
            )
            return str(done.choices[0].message.content)

        reply = await asyncio.to_thread(chat, list(history))
        assert reply == f"You said: turn {turn}"
        history.append({"role": "assistant", "content": reply})


async def test_kill_9_of_the_owner_behind_nginx(cluster: tuple[Any, list[Server]], shared: Shared) -> None:
    import redis.asyncio as aioredis

    front, backends = cluster
    await listening(front)

    def chat(text: str, model: str = "hermes-agent") -> str:
        done = sdk(front).chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": text}],
            extra_headers={"X-Hermes-Session-Id": "k9"},
        )
        return str(done.choices[0].message.content)

    for text in ("first", "second"):  # committed turns before the owner dies
        assert await asyncio.to_thread(chat, text) == f"You said: {text}"
    reply = await call(
        front,
        "POST",
        "/v1/runs",
        {"input": "[[tokens 400]] [[delay 25]] go"},
        headers={"X-Hermes-Session-Id": "k9"},
    )
    assert reply.status == 202, reply.text
    run_id = reply.json["run_id"]
    client = aioredis.from_url(shared.url, decode_responses=True)
    try:
        owner = await client.hget(f"hermes:runinfo:{run_id}", "owner")
    finally:
        await client.aclose()
    victim = next(b for b in backends if f"-{b.proc.pid}-" in owner)
    async with Events(front, run_id) as stream:
        await stream.until("message.delta")
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(10)  # reaped, as a supervisor would: no zombie left holding its pid
        end = (await stream.until("run.failed"))[-1]
    assert end["data"]["error_code"] == "owner_lost"
    for _ in range(len(backends)):  # the survivors tell the stream's story, whichever answers
        status = await call(front, "GET", f"/v1/runs/{run_id}")
        assert (status.json["status"], status.json["error_code"]) == ("failed", "owner_lost"), status.text
        assert status.json["last_seq"] == end["id"]
        if "HERMES_POSTGRES_DSN" in shared.env:  # the run records are shared: every listing has it
            runs = (await call(front, "GET", "/v1/runs")).json["data"]
            listed = next(r for r in runs if r["run_id"] == run_id)
            assert (listed["status"], listed.get("error_code")) == ("failed", "owner_lost"), listed
    lost = await call(front, "POST", f"/v1/runs/{run_id}/steer", {"input": "anyone?"})
    assert_error(lost, 409, "run_not_accepting_steer")

    # The dead owner's session is usable again from the survivors, and no committed row was lost:
    # the history model repeats every stored user message, the killed run's prompt included.
    assert (await asyncio.to_thread(chat, "still there?")) == "You said: still there?"
    assert (await asyncio.to_thread(chat, "recap", "mock:history")) == (
        "Turns: first | second | go | still there? | recap"
    )


async def test_responses_chain_conversations_and_run_listing_are_shared_behind_nginx(
    cluster: tuple[Any, list[Server]],
) -> None:
    postgres_dsn()  # the API server's records are shared when storage is PostgreSQL
    front, backends = cluster
    await listening(front)
    # Strict round robin: with nothing else in flight, consecutive requests land on different
    # instances, so every link of a chain below is served by another process than the previous.
    assert await pids_behind(front) == {b.proc.pid for b in backends}
    client = sdk(front)

    def chain() -> tuple[str, str, set[str]]:
        last = client.responses.create(model="mock:history", input="one")
        sessions = {str(last.model_extra["hermes"]["session_id"])} if last.model_extra else set()
        for word in ("two", "three", "four"):
            last = client.responses.create(model="mock:history", input=word, previous_response_id=last.id)
            sessions.add(str((last.model_extra or {})["hermes"]["session_id"]))
        fetched = client.responses.retrieve(last.id)
        return last.output_text, fetched.output_text, sessions

    text, fetched, sessions = await asyncio.to_thread(chain)
    assert text == "Turns: one | two | three | four"
    assert fetched == text  # stored by one instance, read back through another
    assert len(sessions) == 1

    def named() -> list[str]:
        said = []
        for word in ("alpha", "beta", "gamma"):
            done = client.responses.create(
                model="mock:history", input=word, extra_body={"conversation": "nginx-shared"}
            )
            said.append(done.output_text)
        return said

    assert await asyncio.to_thread(named) == [
        "Turns: alpha",
        "Turns: alpha | beta",
        "Turns: alpha | beta | gamma",
    ]

    started = [await start_run(front, f"listed {i}") for i in range(3)]
    for run_id in started:
        await wait_status(front, run_id, "completed")
    for _ in range(len(backends)):  # every instance lists every run of the key
        listing = await call(front, "GET", "/v1/runs")
        assert listing.status == 200, listing.text
        assert set(started) <= {r["run_id"] for r in listing.json["data"]}, listing.json
    assert_error(await call(front, "GET", "/v1/runs?limit=0"), 400, "invalid_value")
