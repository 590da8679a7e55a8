"""``hermes api`` exports its spans over OTLP/HTTP to a collector named by the standard variable,
continues the caller's ``traceparent`` header and passes the tool call's span to an MCP server in
``params._meta`` (docs/observability.md#propagation). The collector is a fake that decodes the
OTLP protobuf with the exporter's own message classes."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.api.api_helpers import HERMES, start_server
from tests.api.conftest import BASE_CONFIG
from tests.timing import eventually, scaled

SPANS = web.AppKey("spans", list)
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


async def traces(request: web.Request) -> web.Response:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    message = ExportTraceServiceRequest()
    message.ParseFromString(await request.read())
    for resource in message.resource_spans:
        service = {a.key: a.value.string_value for a in resource.resource.attributes}.get("service.name")
        for scope in resource.scope_spans:
            for span in scope.spans:
                attributes = {a.key: a.value for a in span.attributes}
                request.app[SPANS].append(
                    {
                        "service": service,
                        "name": span.name,
                        "trace": span.trace_id.hex(),
                        "span": span.span_id.hex(),
                        "parent": span.parent_span_id.hex(),
                        "attributes": attributes,
                        "links": [(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
                    }
                )
    return web.Response(body=b"", content_type="application/x-protobuf")


async def accept(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(body=b"", content_type="application/x-protobuf")


@pytest.fixture
async def collector() -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
    app = web.Application()
    app[SPANS] = []
    app.router.add_post("/v1/traces", traces)
    app.router.add_post("/v1/metrics", accept)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield app[SPANS], f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def test_the_callers_trace_reaches_the_collector_and_the_mcp_server(
    collector: tuple[list[dict[str, Any]], str], tmp_path: Any
) -> None:
    spans, endpoint = collector
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_SERVICE_NAME": "hermes-under-test",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_METRIC_EXPORT_INTERVAL": "100000",
    }
    script = Path(__file__).with_name("meta_server.py")
    server_table = (
        f"[mcp_servers.tiny]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(script))}]\n"
    )
    config = 'model = "mock:echo"\n' + BASE_CONFIG + server_table + "connect_timeout_s = 60\n"
    server = await asyncio.to_thread(start_server, tmp_path / "home", config=config, env=env)
    try:
        headers = {**server.auth(), "traceparent": f"00-{TRACE}-{CALLER_SPAN}-01"}
        body = {
            "model": "mock:echo",
            "messages": [{"role": "user", "content": "[[tool mcp_tiny_trace_meta {}]] go"}],
        }
        deadline = time.monotonic() + scaled(40)
        async with aiohttp.ClientSession() as http:
            while True:  # the MCP server starts in the background: until then the tool is unknown
                async with http.post(f"{server.base}/v1/chat/completions", json=body, headers=headers) as r:
                    assert r.status == 200, await r.text()
                    answer = (await r.json())["choices"][0]["message"]["content"]
                if "traceparent: 00-" in answer or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
        assert f"traceparent: 00-{TRACE}-" in answer, answer
        sent_span = answer.split(f"00-{TRACE}-", 1)[1][:16]

        def exported() -> bool:
            names = {s["name"] for s in spans if s["trace"] == TRACE}
            return {"invoke_agent hermes", "execute_tool mcp_tiny_trace_meta"} <= names

        await eventually(exported, what="the turn's spans at the collector")
    finally:
        await asyncio.to_thread(server.stop)
    mine = [s for s in spans if s["trace"] == TRACE]
    [turn] = [s for s in mine if s["name"] == "invoke_agent hermes"]
    assert turn["parent"] == CALLER_SPAN and turn["service"] == "hermes-under-test"
    [tool] = [s for s in mine if s["name"] == "execute_tool mcp_tiny_trace_meta"]
    assert tool["parent"] == turn["span"]
    # The MCP server was given the tool call's own span as its parent.
    assert sent_span == tool["span"]
    assert any(s["name"].startswith("chat ") and s["parent"] == turn["span"] for s in mine)
    assert not any("go" == a.string_value for s in mine for a in s["attributes"].values()), json.dumps(
        [s["name"] for s in mine]
    )


def _otel_env(endpoint: str) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_METRICS_EXPORTER": "none",
    }


async def _turn_under(spans: list[dict[str, Any]], caller: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        for span in spans:
            if span["name"] == "invoke_agent hermes" and span["trace"] == TRACE and span["parent"] == caller:
                return span
        return None

    return await eventually(found, what="the turn span under the caller's")


async def test_tui_prompt_meta_traceparent(
    collector: tuple[list[dict[str, Any]], str], tmp_path: Any
) -> None:
    from tests.tui.client import TuiProcess, write_config

    spans, endpoint = collector
    home = tmp_path / "home"
    write_config(home)
    tui = TuiProcess(home, env=_otel_env(endpoint), cwd=home)
    try:
        await asyncio.to_thread(tui.wait_event, "", "gateway.ready", timeout=scaled(20))
        sid = (await asyncio.to_thread(tui.call, "session.create", cols=80))["session_id"]
        caller = "1111111111111111"
        meta = {"traceparent": f"00-{TRACE}-{caller}-01"}
        await asyncio.to_thread(tui.call, "prompt.submit", session_id=sid, text="hello", _meta=meta)
        await asyncio.to_thread(tui.wait_complete, sid)
    finally:
        await asyncio.to_thread(tui.close)
    turn = await _turn_under(spans, caller)
    assert turn["attributes"]["gen_ai.agent.id"].string_value


async def test_acp_prompt_meta_traceparent(
    collector: tuple[list[dict[str, Any]], str], tmp_path: Any
) -> None:
    from tests.acp.conftest import Home

    spans, endpoint = collector
    home = Home(tmp_path)
    home.write_config('model = "mock:echo"\n')
    process = await asyncio.create_subprocess_exec(
        HERMES,
        "acp",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=home.env(**_otel_env(endpoint)),
    )
    assert process.stdin is not None and process.stdout is not None
    stdout = process.stdout

    async def request(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        process.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n"
        )
        await process.stdin.drain()
        while True:
            frame = json.loads(await asyncio.wait_for(stdout.readline(), scaled(30)))
            if frame.get("id") == rid:
                return frame

    caller = "2222222222222222"
    try:
        await request(0, "initialize", {"protocolVersion": 1})
        created = await request(1, "session/new", {"cwd": str(home.workspace), "mcpServers": []})
        sid = created["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}
        answer = await request(
            2, "session/prompt", {**prompt, "_meta": {"traceparent": f"00-{TRACE}-{caller}-01"}}
        )
        assert answer["result"]["stopReason"] == "end_turn", answer
    finally:
        process.stdin.close()
        await asyncio.wait_for(process.wait(), scaled(20))
    await _turn_under(spans, caller)
