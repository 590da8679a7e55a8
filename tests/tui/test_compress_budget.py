"""``session.compress`` and ``/compress`` over a budget are refused before the summary call
(docs/reference/budgets.md#outside-a-turn): error 4033 with ``data.code: "budget_exceeded"``,
naming the bucket of the caller's tenant, and the transcript stays as it was.

Over ``hermes tui --ws`` with a stored key of the tenant ``acme``, through the ``openai``
provider against a fake upstream that reports known usage.
"""

from __future__ import annotations

from pathlib import Path

from tests.api.test_api_scoped_keys import cli_key
from tests.providers.test_auxiliary_budgets import Upstream
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import OPENAI
from tests.tui.client import WsClient, WsServer, write_config
from tests.tui.test_ws_tenants import answer, turn

TOKEN = "ws-compress-budget-token-0123456789"


def config(url: str) -> str:
    # Each turn holds about $0.1 and settles $0.04; the summary request's output limit (4096
    # tokens) holds about $4.1, which acme's $0.5 cannot fit.
    return f"""model = "openai:{OPENAI.model}"
[providers.openai]
api_key = "{OPENAI.key}"
base_url = "{url}/v1"
[agent]
provider_retries = 0
[titles]
refine = false
[budgets]
max_output_tokens = 100
[budgets.tenants.acme]
spend_usd = 0.5
[budgets.prices."openai/{OPENAI.model}"]
input = 1.0
output = 1000.0
"""


async def test_compress_over_the_tenants_budget_answers_budget_exceeded(tmp_path: Path) -> None:
    async with FakeUpstream() as up:
        upstream = Upstream(up)
        home = tmp_path / "home"
        write_config(home, config(up.url))
        acme, _ = cli_key(home, "acme", "observe,control")
        srv = WsServer(home, TOKEN)
        try:
            a = await WsClient.connect(srv.url, headers={"Authorization": f"Bearer {acme}"})
            try:
                sid = (await a.call("session.create", {}))["session_id"]
                for text in ("one", "two"):
                    assert (await turn(a, sid, text))["status"] == "complete"
                assert len(upstream.bodies) == 2
                before = (await a.call("session.history", {"session_id": sid}))["messages"]
                for method, params in (
                    ("session.compress", {"session_id": sid}),
                    ("command.dispatch", {"session_id": sid, "command": "/compress"}),
                ):
                    reply = await answer(a, method, params)
                    assert "error" in reply, (method, reply)
                    error = reply["error"]
                    assert error["code"] == 4033, (method, error)
                    assert error["data"]["code"] == "budget_exceeded", (method, error)
                    assert error["data"]["bucket"] == "tenant:acme", (method, error)
                    assert error["data"]["limit"] == "spend_usd", (method, error)
                    assert "tenant:acme" in error["message"], (method, error)
                assert len(upstream.bodies) == 2  # no summary request reached the model
                after = (await a.call("session.history", {"session_id": sid}))["messages"]
                assert after == before
                # The session is not wedged: a turn that fits still runs.
                assert (await turn(a, sid, "three"))["status"] == "complete"
            finally:
                await a.close()
        finally:
            srv.stop()
        # A new gateway, where the session ran no turn yet: the caller's key still pays.
        srv = WsServer(home, TOKEN)
        try:
            a = await WsClient.connect(srv.url, headers={"Authorization": f"Bearer {acme}"})
            try:
                await a.call("session.resume", {"session_id": sid})
                for method, params in (
                    ("session.compress", {"session_id": sid}),
                    ("command.dispatch", {"session_id": sid, "command": "/compress"}),
                ):
                    reply = await answer(a, method, params)
                    assert reply.get("error", {}).get("code") == 4033, (method, reply)
                    assert reply["error"]["data"]["bucket"] == "tenant:acme", (method, reply)
                assert len(upstream.bodies) == 3  # the two turns and "three"; no summary
            finally:
                await a.close()
        finally:
            srv.stop()
