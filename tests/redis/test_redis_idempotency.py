"""``Idempotency-Key`` of non-streamed chat and Responses requests across three ``hermes api``
behind nginx, with the ``openai`` SDK and a fake upstream model: a retry that lands on another
instance gets the first answer (same id, same text) and the model ran once; twins sent at the same
time to two instances run the model once; a different body under the key is a 409 wherever it
lands."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest
from aiohttp import web

from tests.api.api_helpers import Server, start_server
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream
from tests.providers.vendors import delta
from tests.redis.conftest import Shared
from tests.redis.test_redis_instances import config
from tests.redis.test_redis_nginx import KEY, Front, listening, pids_behind, sdk
from tests.services import postgres_dsn


class Model:
    """The fake upstream: every call answers a different text, after a short think."""

    def __init__(self, up: FakeUpstream) -> None:
        self.up = up
        self.numbers = itertools.count(1)
        up.on("POST", "/v1/chat/completions", self.answer)

    @property
    def calls(self) -> int:
        return sum(1 for r in self.up.requests if r.path == "/v1/chat/completions")

    async def answer(self, request: web.Request) -> web.StreamResponse:
        n = next(self.numbers)
        await asyncio.sleep(0.3)  # the model thinks: twins overlap
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for frame in (delta(content=f"answer number {n}"), delta(finish_reason="stop"), OPENAI_DONE):
            await response.write(frame)
        await response.write_eof()
        return response


@pytest.fixture
async def rig(tmp_path: Path, shared: Shared) -> AsyncIterator[tuple[Front, list[Server], Model]]:
    postgres_dsn()  # the instances share the records when storage is PostgreSQL
    async with FakeUpstream() as up:
        model = Model(up)
        provider = (
            'model = "openai:gpt-4o"\n[providers.openai]\napi_key = "sk-test-0123456789abcdef"\n'
            f'base_url = "{up.url}/v1"\n'
        )
        env = {**shared.env, "API_SERVER_KEY": KEY}
        backends = [
            start_server(tmp_path / f"i{i}", config=provider + config(shared), env=env) for i in range(3)
        ]
        front = Front(tmp_path / "nginx", backends)
        try:
            await listening(front)
            assert await pids_behind(front) == {b.proc.pid for b in backends}
            yield front, backends, model
        finally:
            front.stop()
            for b in backends:
                b.stop()


def chat(client: openai.OpenAI, key: str, text: str) -> tuple[str, str, str | None]:
    raw = client.chat.completions.with_raw_response.create(
        model="hermes-agent",
        messages=[{"role": "user", "content": text}],
        extra_headers={"Idempotency-Key": key},
    )
    done = raw.parse()
    return done.id, str(done.choices[0].message.content), raw.headers.get("Idempotency-Replayed")


def respond(client: openai.OpenAI, key: str, text: str) -> tuple[str, str, str | None]:
    raw = client.responses.with_raw_response.create(
        model="hermes-agent", input=text, extra_headers={"Idempotency-Key": key}
    )
    done = raw.parse()
    return done.id, done.output_text, raw.headers.get("Idempotency-Replayed")


async def test_a_retry_on_another_instance_returns_the_first_answer(
    rig: tuple[Front, list[Server], Model],
) -> None:
    front, _, model = rig
    client = sdk(front)
    first = await asyncio.to_thread(chat, client, "retry-1", "hello")
    assert first[1].startswith("answer number") and first[2] is None
    # Round robin: the three retries land on every instance, two of them not the first one's.
    retries = [await asyncio.to_thread(chat, client, "retry-1", "hello") for _ in range(3)]
    assert retries == [(first[0], first[1], "true")] * 3
    assert model.calls == 1

    with pytest.raises(openai.ConflictError) as caught:
        await asyncio.to_thread(chat, client, "retry-1", "another body")
    assert caught.value.code == "idempotency_key_conflict"

    answered = await asyncio.to_thread(respond, client, "retry-2", "hello")
    again = [await asyncio.to_thread(respond, client, "retry-2", "hello") for _ in range(3)]
    assert again == [(answered[0], answered[1], "true")] * 3
    assert model.calls == 2


async def test_twins_on_two_instances_run_the_model_once(rig: tuple[Front, list[Server], Model]) -> None:
    front, _, model = rig
    client = sdk(front)

    async def both(call: Any, key: str) -> list[tuple[str, str, str | None]]:
        return list(
            await asyncio.gather(*(asyncio.to_thread(call, client, key, "at once") for _ in range(2)))
        )

    chats = await both(chat, "twin-1")
    assert chats[0][:2] == chats[1][:2] and sorted(str(c[2]) for c in chats) == ["None", "true"]
    assert model.calls == 1
    responses = await both(respond, "twin-2")
    assert responses[0][:2] == responses[1][:2]
    assert model.calls == 2
