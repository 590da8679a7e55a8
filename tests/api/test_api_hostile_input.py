"""Hostile or wrong request values: refused with a 400 before anything is created or run."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.api.api_helpers import Server, assert_error, call

USER = {"role": "user", "content": "hi"}


def _bodies(model: str, marker: Path) -> dict[str, dict[str, Any]]:
    touch = f'go [[tool terminal {{"command": "touch {marker}"}}]]'
    return {
        "/v1/chat/completions": {"model": model, "messages": [{"role": "user", "content": touch}]},
        "/v1/responses": {"model": model, "input": touch},
        "/v1/runs": {"model": model, "input": touch},
    }


async def _settle(server: Server) -> dict[str, Any]:
    """Run one ordinary run to its end, so anything started before it had its chance to run."""
    reply = await call(server, "POST", "/v1/runs", {"input": "after"})
    assert reply.status == 202, reply.text
    run_id = reply.json["run_id"]
    deadline = asyncio.get_running_loop().time() + 20
    while True:
        status = (await call(server, "GET", f"/v1/runs/{run_id}")).json
        if status["status"] == "completed":
            break
        assert asyncio.get_running_loop().time() < deadline, status
        await asyncio.sleep(0.05)
    return dict((await call(server, "GET", "/health/detailed")).json["api_server"])


async def test_a_model_with_cr_lf_is_a_400_and_nothing_runs(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    server = make_server()
    marker = tmp_path / "ran"
    for model in ("mock:echo\r\nX-Injected: 1", "hermes-agent\n", "mock:\techo", "m" * 300):
        for path, body in _bodies(model, marker).items():
            for stream in (False, True) if path != "/v1/runs" else (False,):
                reply = await call(server, "POST", path, {**body, "stream": stream} if stream else body)
                err = assert_error(reply, 400, "invalid_value")
                assert err["param"] == "model"
                assert "X-Injected" not in reply.headers
    counters = await _settle(server)
    assert not marker.exists()
    assert counters["stored_runs"] == 1  # only the settling run
    assert "Traceback" not in "".join(server.log)


async def test_an_unknown_explicit_model_is_a_400_with_candidates(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    server = make_server()
    marker = tmp_path / "ran"
    for path, body in _bodies("mock:nope", marker).items():
        for stream in (False, True) if path != "/v1/runs" else (False,):
            reply = await call(server, "POST", path, {**body, "stream": stream} if stream else body)
            err = assert_error(reply, 400, "model_not_found")
            assert err["param"] == "model"
            assert "mock:nope" in err["message"] and "mock:echo" in err["message"]
            assert "mock:echo" in err["candidates"]
    # The same through the separate provider field.
    reply = await call(server, "POST", "/v1/runs", {"provider": "mock", "model": "nope", "input": "x"})
    assert "mock:echo" in assert_error(reply, 400, "model_not_found")["candidates"]
    counters = await _settle(server)
    assert not marker.exists()
    assert counters["stored_runs"] == 1
    log = "".join(server.log)
    assert "Traceback" not in log and "crashed" not in log
