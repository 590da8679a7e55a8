"""Budgets at the API's door (docs/reference/api-server.md#budgets): while a key's only run slot
is taken, chat completions, Responses and runs are refused before anything runs, with 429
``budget_exceeded``, ``Retry-After`` and the limit named; the slot comes back when the run ends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.api.api_helpers import Server, call
from tests.redis.test_redis_instances import start_run, wait_status
from tests.timing import within_one_budget_minute

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


TENANT_ONE_REQUEST = """[budgets.tenants.acme]
requests_per_minute = 1
"""


async def test_a_scoped_key_charges_its_own_key_and_tenant(make_server: Callable[..., Server]) -> None:
    """A stored key is charged as itself in its tenant: acme's one request a minute is spent by
    one acme key for every acme key, while the configured key (tenant ``default``) goes on."""
    from tests.api.test_api_scoped_keys import cli_key

    srv = make_server(TENANT_ONE_REQUEST)
    first, _ = cli_key(srv.home, "acme", "control")
    second, _ = cli_key(srv.home, "acme", "control")
    chat = {"model": "hermes-agent", "messages": [{"role": "user", "content": "hi"}]}
    await within_one_budget_minute()
    ok = await call(srv, "POST", "/v1/chat/completions", chat, auth=f"Bearer {first}")
    assert ok.status == 200, ok.text
    again = await call(srv, "POST", "/v1/chat/completions", chat, auth=f"Bearer {second}")
    assert again.status == 429, again.text
    assert again.json["error"]["limit"] == "requests_per_minute"
    assert again.json["error"]["bucket"] == "tenant:acme"
    mine = await call(srv, "POST", "/v1/chat/completions", chat)
    assert mine.status == 200, mine.text


async def test_a_scoped_keys_own_limit_names_its_key_id(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    """``[budgets.keys."<id>"]`` limits the stored key of that id, and the refusal names it."""
    from tests.api.test_api_scoped_keys import cli_key

    home = tmp_path / "keyed"
    home.mkdir()
    secret, key_id = cli_key(home, "acme", "control")  # made in the storage before the start
    srv = make_server(f'[budgets.keys."{key_id}"]\nrequests_per_minute = 1\n', home=home)
    chat = {"model": "hermes-agent", "messages": [{"role": "user", "content": "hi"}]}
    await within_one_budget_minute()
    ok = await call(srv, "POST", "/v1/chat/completions", chat, auth=f"Bearer {secret}")
    assert ok.status == 200, ok.text
    refused = await call(srv, "POST", "/v1/chat/completions", chat, auth=f"Bearer {secret}")
    assert refused.status == 429, refused.text
    assert refused.json["error"]["bucket"] == f"key:{key_id}"
    other, _ = cli_key(home, "acme", "control")  # the tenant's other key has no such limit
    assert (await call(srv, "POST", "/v1/chat/completions", chat, auth=f"Bearer {other}")).status == 200
