"""Budgets fail closed on the API (docs/reference/api-server.md#budgets): when the Redis that
keeps the buckets stops answering, a budgeted request gets 503 ``budget_unavailable`` with
``Retry-After`` and nothing reaches the model; when Redis is back, requests run again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.api.api_helpers import call, start_server
from tests.redis.fault_world import redis_answers

CONFIG = """[agent]
provider_retries = 0
[titles]
refine = false
[bus]
backend = "redis"
heartbeat_s = 0.5
owner_grace_s = 3
[budgets.key]
spend_usd = 5.0
[budgets.prices."*"]
input = 1.0
output = 1.0
"""


async def test_a_redis_outage_refuses_budgeted_requests(
    tmp_path: Path, private_redis: tuple[str, Any]
) -> None:
    url, (start, stop) = private_redis
    await redis_answers(url)
    srv = start_server(tmp_path / "i0", config=CONFIG, env={"HERMES_REDIS_URL": url})
    try:
        chat = {"model": "hermes-agent", "messages": [{"role": "user", "content": "hi"}]}
        ok = await call(srv, "POST", "/v1/chat/completions", chat)
        assert ok.status == 200, ok.text
        stop()
        reply = await call(srv, "POST", "/v1/chat/completions", chat)
        assert reply.status == 503, reply.text
        assert reply.json["error"]["code"] == "budget_unavailable"
        assert "does not answer" in reply.json["error"]["message"]
        assert int(reply.headers["Retry-After"]) >= 1
        start()
        await redis_answers(url)
        again = await call(srv, "POST", "/v1/chat/completions", chat)
        assert again.status == 200, again.text
    finally:
        srv.stop()
