"""A NUL character in a workspace path is 400 ``invalid_workspace`` saying so, never a 500
(docs/reference/api-server.md#error-codes). Headers cannot carry one (HTTP forbids it), so the
body's ``cwd`` of a run is the path a client can send it in."""

from __future__ import annotations

from tests.api.api_helpers import Server, assert_error, call


async def test_a_run_cwd_with_a_nul_is_invalid_workspace(server: Server) -> None:
    reply = await call(server, "POST", "/v1/runs", {"input": "hi", "cwd": "/tmp/not\x00a-folder"})
    error = assert_error(reply, 400, "invalid_workspace")
    assert error["param"] == "cwd" and "NUL" in error["message"]
    fine = await call(server, "POST", "/v1/runs", {"input": "hi"})
    assert fine.status == 202, fine.text
    assert "Traceback" not in "".join(server.log)
