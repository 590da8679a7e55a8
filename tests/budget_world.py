"""What the multi-instance budget tests share: a fake OpenAI upstream with known usage that checks
each request's output limit, the ``[budgets]`` configuration, and run helpers.

The instances call the ``openai`` provider, pointed at :class:`PricedUpstream`. Every call
reports ``prompt_tokens = 50`` and ``completion_tokens = 40``; at the configured prices ($1 and
$1000 per million) a call costs exactly :data:`CALL_USD`. The upstream records every request's
``max_tokens``: the reservation was made for that many output tokens, so a request
without it (or with another value) is a defect the tests report.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from aiohttp import web

from tests.api.api_helpers import Server, call
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream
from tests.providers.vendors import OPENAI, delta, usage
from tests.timing import eventually, scaled

MAX_OUT = 100
PROMPT, COMPLETION = 50, 40
PRICE_IN, PRICE_OUT = 1.0, 1000.0  # dollars per million tokens
CALL_USD = (PROMPT * PRICE_IN + COMPLETION * PRICE_OUT) / 1_000_000
TERMINAL = ("completed", "failed", "cancelled", "interrupted")


def principal(key: str) -> str:
    """The key id the API charges for a bearer key."""
    return "principal:" + hashlib.sha256(key.encode()).hexdigest()[:32]


class PricedUpstream:
    """A fake OpenAI server: known usage per call, a slow reply for prompts saying ``slow``."""

    def __init__(self, up: FakeUpstream) -> None:
        self.up = up
        self.max_tokens: list[Any] = []
        self.slow_started = asyncio.Event()
        self.release = asyncio.Event()
        up.json("GET", "/v1/models", {"object": "list", "data": [{"id": OPENAI.model, "object": "model"}]})
        up.on("POST", "/v1/chat/completions", self._chat)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = self.up.requests[-1].body
        # A custom base_url is the generic dialect: the output limit travels as max_tokens.
        self.max_tokens.append(body.get("max_tokens"))
        last = body["messages"][-1]["content"]
        text = last if isinstance(last, str) else " ".join(p.get("text", "") for p in last)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(delta(role="assistant", content=""))
        if "slow" in text:
            self.slow_started.set()
            while not self.release.is_set():  # until the instance reading it dies
                await response.write(delta(content="."))
                await asyncio.sleep(0.1)
        await asyncio.sleep(0.02)  # calls overlap: several reservations are in flight at once
        await response.write(delta(content="done"))
        await response.write(delta(finish_reason="stop"))
        await response.write(usage(PROMPT, COMPLETION))
        await response.write(OPENAI_DONE)
        await response.write_eof()
        return response


def budget_config(url: str, keys: dict[str, str], ttl_s: float) -> str:
    """The model, provider, keys and budgets every instance of a test shares.

    :param keys: bearer key → the TOML body of its ``[budgets.keys."<id>"]`` table.
    """
    tables = "".join(f'[budgets.keys."{principal(k)}"]\n{body}\n' for k, body in keys.items())
    key_list = ", ".join(f'"{k}"' for k in keys)
    return f"""model = "openai:{OPENAI.model}"
[providers.openai]
api_key = "{OPENAI.key}"
base_url = "{url}/v1"
[agent]
provider_retries = 0
[titles]
refine = false
[api_server]
keys = [{key_list}]
max_concurrent_runs = 500
[budgets]
max_output_tokens = {MAX_OUT}
reservation_ttl_s = {ttl_s}
[budgets.prices."openai/{OPENAI.model}"]
input = {PRICE_IN}
output = {PRICE_OUT}
{tables}"""


async def post_run(server: Any, key: str, text: str) -> tuple[int, Any, dict[str, str]]:
    """POST a run; return (status, body, headers)."""
    reply = await call(server, "POST", "/v1/runs", {"input": text}, auth=f"Bearer {key}")
    return reply.status, reply.json, dict(reply.headers)


async def settled(server: Any, key: str, run_id: str) -> dict[str, Any]:
    """Wait for a run's terminal status and return it."""

    async def current() -> dict[str, Any] | None:
        reply = await call(server, "GET", f"/v1/runs/{run_id}", auth=f"Bearer {key}")
        status = dict(reply.json) if reply.status == 200 else {}
        return status if status.get("status") in TERMINAL else None

    found: dict[str, Any] = await eventually(current, timeout=scaled(60), interval=0.1, what=run_id)
    return found


def run_cost(status: dict[str, Any]) -> float:
    """What a settled run's reported usage costs at the configured prices."""
    used = status.get("usage") or {}
    return (used.get("input_tokens", 0) * PRICE_IN + used.get("output_tokens", 0) * PRICE_OUT) / 1_000_000


def assert_refusal(status: int, body: Any, headers: dict[str, str], limit: str) -> None:
    """A refusal before the call: 429, ``budget_exceeded``, a whole-second ``Retry-After``."""
    assert status == 429, (status, body)
    assert body["error"]["code"] == "budget_exceeded", body
    assert body["error"]["limit"] == limit, body
    assert int(headers["Retry-After"]) >= 1, headers


async def spend_burst(servers: list[Any], key: str, n: int, cap: float) -> tuple[float, int, int]:
    """Start ``n`` runs at once (spread over ``servers``); return (spend of the completed runs,
    how many completed, how many the budget refused before or during the call)."""
    replies = await asyncio.gather(*(post_run(servers[i % len(servers)], key, f"go {i}") for i in range(n)))
    refused = 0
    started: list[tuple[Any, str]] = []
    for i, (status, body, headers) in enumerate(replies):
        if status == 202:
            started.append((servers[i % len(servers)], body["run_id"]))
        else:
            assert_refusal(status, body, headers, "spend_usd")
            refused += 1
    ends = await asyncio.gather(*(settled(s, key, run_id) for s, run_id in started))
    spent = 0.0
    completed = 0
    for end in ends:
        if end["status"] == "completed":
            completed += 1
            assert run_cost(end) == CALL_USD, end
            spent += CALL_USD
        else:  # admitted, then stopped at its model call: nothing was spent
            assert end["status"] == "failed" and end["error_code"] == "budget_exceeded", end
            assert run_cost(end) == 0.0, end
            refused += 1
    assert completed + refused == n
    return spent, completed, refused


async def fill_up(server: Any, key: str, upstream: PricedUpstream) -> float:
    """Start runs one at a time until one never reaches the model (refused at the door once
    nothing is left, else at its reservation); return what the completed ones cost."""
    spent = 0.0
    for _ in range(30):
        calls = len(upstream.max_tokens)
        status, body, headers = await post_run(server, key, "one more")
        if status != 202:
            assert_refusal(status, body, headers, "spend_usd")
            return spent
        end = await settled(server, key, body["run_id"])
        if end["status"] == "completed":
            spent += CALL_USD
            continue
        assert end["status"] == "failed" and end["error_code"] == "budget_exceeded", end
        assert len(upstream.max_tokens) == calls  # stopped before its call
        return spent
    raise AssertionError("thirty more runs fitted under the cap")


__all__ = ["Server"]
