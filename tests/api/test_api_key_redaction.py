"""The server's own API keys never come back in a response, a run, a stored row or the log."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any

from tests.api.api_helpers import Server, call, parse_sse

# Shapes no built-in pattern knows, so only registering them as secrets can mask them.
KEY_ONE = "srvkey-one-7f3a9c2e5b8d1f4a"
KEY_TWO = "srvkey-two-0e6b4d2c9a7f5e3b"
KEYS = (KEY_ONE, KEY_TWO)


def _clean(text: str) -> None:
    for key in KEYS:
        assert key not in text


async def _wait_run(server: Server, run_id: str) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + 20
    while True:
        status = (await call(server, "GET", f"/v1/runs/{run_id}")).json
        if status["status"] in ("completed", "failed"):
            return dict(status)
        assert asyncio.get_running_loop().time() < deadline, status
        await asyncio.sleep(0.05)


async def test_error_texts_holding_a_server_key_are_masked_everywhere(
    make_server: Callable[..., Server],
) -> None:
    server = make_server(f'[api_server]\nkeys = ["{KEY_TWO}"]\n', env={"API_SERVER_KEY": KEY_ONE})
    leak = f"[[error upstream rejected {KEY_ONE} and {KEY_TWO}]]"
    messages = [{"role": "user", "content": f"hi {leak}"}]

    reply = await call(server, "POST", "/v1/chat/completions", {"messages": messages})
    assert reply.status == 502, reply.text
    _clean(reply.text)
    assert "[REDACTED]" in reply.json["error"]["message"]

    reply = await call(server, "POST", "/v1/chat/completions", {"messages": messages, "stream": True})
    final = [f["data"] for f in parse_sse(reply.text) if isinstance(f.get("data"), dict)][-1]
    assert final["choices"][0]["finish_reason"] == "error"
    _clean(reply.text)

    reply = await call(server, "POST", "/v1/responses", {"input": f"hi {leak}"})
    assert reply.json["status"] == "failed", reply.text
    _clean(reply.text)
    _clean((await call(server, "GET", f"/v1/responses/{reply.json['id']}")).text)
    items = await call(server, "GET", f"/v1/responses/{reply.json['id']}/input_items")
    assert "[REDACTED]" in items.text
    _clean(items.text)

    reply = await call(server, "POST", "/v1/runs", {"input": f"hi {leak}"})
    run_id = reply.json["run_id"]
    status = await _wait_run(server, run_id)
    assert status["status"] == "failed" and "[REDACTED]" in status["error"]
    _clean(str(status))
    _clean((await call(server, "GET", f"/v1/runs/{run_id}/events")).text)

    # A model reference that quotes a key is echoed back masked.
    reply = await call(server, "POST", "/v1/runs", {"model": f"mock:{KEY_TWO}", "input": "x"})
    assert reply.status == 400 and reply.json["error"]["code"] == "model_not_found"
    _clean(reply.text)

    server.stop()
    db = sqlite3.connect(server.home / "hermes.sqlite3")
    try:
        rows = [str(row) for row in db.execute("SELECT * FROM records WHERE namespace LIKE 'api.%'")]
    finally:
        db.close()
    assert any(run_id in row for row in rows)
    for row in rows:
        _clean(row)
    _clean("".join(server.log))
