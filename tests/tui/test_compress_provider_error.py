"""When the model call behind ``/compress`` fails, the host is told why (keys masked).

Through the ``openai`` provider against a fake upstream that answers turns but refuses the
summary request. ``command.dispatch /compress`` answered an opaque -32603 "internal error" (with
a traceback on stderr) and ``session.compress`` only named the exception class.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiohttp import web

from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import openai_reply
from tests.tui.client import RpcFailure, TuiProcess, write_config

LEAKED = "sk-abcdefghijklmnopqrstuvwxyz0123"


async def test_a_failed_summary_request_is_reported_with_its_reason(tmp_path: Path) -> None:
    async with FakeUpstream() as up:

        async def answer(request: web.Request) -> web.StreamResponse:
            body = await request.json()
            if "You compress conversations" in json.dumps(body["messages"][0]):
                error = {"error": {"message": f"quota gone for {LEAKED}", "type": "insufficient_quota"}}
                return web.json_response(error, status=500)
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for frame in openai_reply("noted"):
                await response.write(frame)
            await response.write_eof()
            return response

        up.on("POST", "/v1/chat/completions", answer)
        home = tmp_path / "home"
        write_config(
            home,
            'model = "openai:gpt-4o"\n[agent]\nprovider_retries = 0\n[titles]\nrefine = false\n'
            f'[providers.openai]\napi_key = "sk-test-0123456789abcdef"\nbase_url = "{up.url}/v1"\n',
        )
        tui = await asyncio.to_thread(TuiProcess, home)
        try:
            await asyncio.to_thread(tui.wait_event, "", "gateway.ready", 20)
            sid = await asyncio.to_thread(tui.create)
            for text in ("one", "two", "three"):
                done = await asyncio.to_thread(tui.turn, sid, text)
                assert done["text"] == "noted"
            for method, params in (
                ("command.dispatch", {"session_id": sid, "command": "/compress"}),
                ("session.compress", {"session_id": sid}),
            ):
                try:
                    await asyncio.to_thread(tui.call, method, **params)
                except RpcFailure as failure:
                    assert failure.code == 5005, (method, failure)
                    assert "quota gone" in failure.message, (method, failure)
                    assert LEAKED not in failure.message
                else:
                    raise AssertionError(f"{method} succeeded")
            history = await asyncio.to_thread(tui.call, "session.history", session_id=sid)
            assert [m["text"] for m in history["messages"]][::2] == ["one", "two", "three"]
        finally:
            await asyncio.to_thread(tui.close)
        assert "Traceback" not in tui.stderr_text()
        assert LEAKED not in tui.stderr_text()
