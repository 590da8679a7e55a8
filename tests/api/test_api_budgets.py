"""Budgets at the API's door (docs/reference/api-server.md#budgets): while a key's only run slot
is taken, chat completions, Responses and runs are refused before anything runs, with 429
``budget_exceeded``, ``Retry-After`` and the limit named; the slot comes back when the run ends."""

from __future__ import annotations

from collections.abc import Callable

from tests.api.api_helpers import Server, call
from tests.redis.test_redis_instances import start_run, wait_status

ONE_RUN = """[budgets.key]
concurrent_runs = 1
"""


def refused(reply: object) -> None:
    status, headers, body = reply.status, reply.headers, reply.json  # type: ignore[attr-defined]
    assert status == 429, (status, body)
    assert body["error"]["code"] == "budget_exceeded" and body["error"]["type"] == "rate_limit_error"
    assert body["error"]["limit"] == "concurrent_runs"
    assert body["error"]["bucket"].startswith("key:principal:")
    assert headers["Retry-After"] == "1"


async def test_every_surface_answers_429_before_the_call(make_server: Callable[..., Server]) -> None:
    srv = make_server(ONE_RUN)
    run_id = await start_run(srv, "[[tokens 400]] [[delay 25]] go")
    await wait_status(srv, run_id, "running")
    chat = {"model": "hermes-agent", "messages": [{"role": "user", "content": "hi"}]}
    refused(await call(srv, "POST", "/v1/chat/completions", chat))
    refused(await call(srv, "POST", "/v1/chat/completions", {**chat, "stream": True}))
    refused(await call(srv, "POST", "/v1/responses", {"model": "hermes-agent", "input": "hi"}))
    refused(await call(srv, "POST", "/v1/runs", {"input": "hi"}))
    stop = await call(srv, "POST", f"/v1/runs/{run_id}/stop")
    assert stop.status == 200, stop.text
    await wait_status(srv, run_id, "cancelled")
    # The slot is back: the next request runs.
    again = await call(srv, "POST", "/v1/chat/completions", chat)
    assert again.status == 200, again.text
    assert again.json["choices"][0]["message"]["content"] == "You said: hi"
