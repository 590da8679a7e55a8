"""A frontend's task prompt (``### Task:``) is one model call outside a turn; it is charged to
the caller's key and tenant like a turn (docs/reference/budgets.md#outside-a-turn) and refused
before the call, with 429 ``budget_exceeded``, when it does not fit.

Through the ``openai`` provider against a fake upstream with known usage.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from tests.api.api_helpers import Server, call
from tests.api.test_api_scoped_keys import cli_key
from tests.providers.test_auxiliary_budgets import Upstream
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import OPENAI

TASK = "### Task:\nGenerate a concise title for this chat."


def config(url: str, acme_cap: float, acme_extra: str = "") -> str:
    # A task prompt reserves its 100 output tokens at $1000 per million (about $0.1) and
    # settles 50 + 40 tokens ($0.04005).
    return f"""model = "openai:{OPENAI.model}"
[providers.openai]
api_key = "{OPENAI.key}"
base_url = "{url}/v1"
[budgets]
max_output_tokens = 100
[budgets.tenants.acme]
spend_usd = {acme_cap}
{acme_extra}
[budgets.prices."openai/{OPENAI.model}"]
input = 1.0
output = 1000.0
"""


async def test_task_prompts_charge_the_callers_tenant_until_it_is_spent(
    make_server: Callable[..., Server],
) -> None:
    async with FakeUpstream() as up:
        upstream = Upstream(up)
        # Two calls fit under $0.15 (0.1 held, then 0.04 + 0.1); a third (0.08 + 0.1) does not.
        srv = make_server(config(up.url, 0.15))
        acme, _ = cli_key(srv.home, "acme", "control")
        body = {"model": "hermes-agent", "messages": [{"role": "user", "content": TASK}]}
        for _ in range(2):
            ok = await call(srv, "POST", "/v1/chat/completions", body, auth=f"Bearer {acme}")
            assert ok.status == 200, ok.text
            assert ok.json["hermes"]["meta_request"] is True
        assert len(upstream.bodies) == 2
        refused = await call(srv, "POST", "/v1/chat/completions", body, auth=f"Bearer {acme}")
        assert refused.status == 429, refused.text
        assert refused.json["error"]["code"] == "budget_exceeded"
        assert refused.json["error"]["bucket"] == "tenant:acme"
        assert int(refused.headers["Retry-After"]) >= 1
        assert len(upstream.bodies) == 2  # the third call was never made
        # The configured key (tenant default) has no limit: its task prompt goes through.
        mine = await call(srv, "POST", "/v1/chat/completions", body)
        assert mine.status == 200, mine.text
        assert len(upstream.bodies) == 3


async def test_task_prompts_count_against_the_keys_requests_per_minute(
    make_server: Callable[..., Server],
) -> None:
    # A task prompt is a request of the key like any chat completion: with 3 a minute, one turn
    # and two task prompts use the minute up and the next task prompt is refused before its call.
    async with FakeUpstream() as up:
        upstream = Upstream(up)
        srv = make_server(config(up.url, 100.0, "requests_per_minute = 3"))
        acme, _ = cli_key(srv.home, "acme", "control")
        if time.time() % 60 > 40:  # the four requests fall in one calendar minute
            await asyncio.sleep(61 - time.time() % 60)
        chat = {"model": "hermes-agent", "messages": [{"role": "user", "content": "hi"}]}
        task = {"model": "hermes-agent", "messages": [{"role": "user", "content": TASK}]}
        turn = await call(srv, "POST", "/v1/chat/completions", chat, auth=f"Bearer {acme}")
        assert turn.status == 200, turn.text
        for _ in range(2):
            ok = await call(srv, "POST", "/v1/chat/completions", task, auth=f"Bearer {acme}")
            assert ok.status == 200, ok.text
            assert ok.json["hermes"]["meta_request"] is True
        made = len(upstream.bodies)
        refused = await call(srv, "POST", "/v1/chat/completions", task, auth=f"Bearer {acme}")
        assert refused.status == 429, refused.text
        assert refused.json["error"]["code"] == "budget_exceeded"
        assert refused.json["error"]["limit"] == "requests_per_minute"
        assert refused.json["error"]["bucket"] == "tenant:acme"
        assert int(refused.headers["Retry-After"]) >= 1
        assert len(upstream.bodies) == made  # the refused task prompt made no call
