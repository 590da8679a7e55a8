"""The caller's ``traceparent`` crosses the Redis run bus (docs/observability.md#across-instances).

Two ``hermes api`` instances share PostgreSQL (or SQLite) and Redis and export their spans to one
fake OTLP collector. A run executes on B (the instance that took ``POST /v1/runs``); an approval
and a steer for it are posted to A, which forwards them to B over the bus. A's ``send run.*``
span and B's ``process run.*`` span belong to the trace of the request A received, B's turn calls
an MCP server that records the ``traceparent`` its request's ``_meta`` carried, and a malformed
header starts a new trace instead of failing the command.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from tests.api.api_helpers import Server, call, start_server
from tests.otel.test_otlp_export import collector  # noqa: F401  (the fake OTLP collector)
from tests.redis.conftest import Shared
from tests.redis.test_redis_instances import KEY, config, wait_status
from tests.timing import eventually, scaled

try:  # part of the test extra: a missing SDK is a broken environment, not a reason to skip
    import opentelemetry.sdk  # noqa: F401
except ImportError as exc:  # pragma: no cover - environment check
    raise ImportError("this test needs the otel extra: pip install -e '.[test]'") from exc

TRACE = "5bf92f3577b34da6a3ce929d0e0e4736"
CREATE_SPAN = "10f067aa0ba902b7"
APPROVE_SPAN = "20f067aa0ba902b7"
SLOW_SPAN = "30f067aa0ba902b7"
OTHER_TRACE = "6bf92f3577b34da6a3ce929d0e0e4736"
STOP_SPAN = "40f067aa0ba902b7"
META = Path(__file__).parents[1] / "otel" / "meta_server.py"
MCP = f"[mcp_servers.tiny]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(META))}]\n"
# A guarded terminal call (it waits for an approval) and the MCP tool, in one model reply.
GUARDED_MCP = '[[tool terminal {"command":"hermes-guard-test"}]] [[tool mcp_tiny_trace_meta {}]] go'
SLOW = "[[tokens 400]] [[delay 25]] go"


def _start(tmp_path: Path, shared: Shared, name: str, endpoint: str) -> Server:
    env = {
        **shared.env,
        "API_SERVER_KEY": KEY,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_SERVICE_NAME": f"hermes-{name}",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_METRICS_EXPORTER": "none",
    }
    return start_server(tmp_path / name, config=config(shared) + MCP, env=env, timeout=scaled(30))


async def _mcp_ready(server: Server) -> None:
    """Wait until the MCP server (started in the background) offers its tool."""

    async def ready() -> bool:
        body = {
            "model": "mock:echo",
            "messages": [{"role": "user", "content": "[[tool mcp_tiny_trace_meta {}]]"}],
        }
        reply = await call(server, "POST", "/v1/chat/completions", body)
        return reply.status == 200 and "traceparent: " in reply.text

    await eventually(ready, timeout=scaled(40), interval=0.2, what="the MCP tool")


def _one(spans: list[dict[str, Any]], **match: str) -> dict[str, Any] | None:
    found = [s for s in spans if all(s[k] == v for k, v in match.items())]
    assert len(found) <= 1, found
    return found[0] if found else None


async def test_a_command_forwarded_over_redis_continues_the_callers_trace(
    tmp_path: Path,
    shared: Shared,
    collector: tuple[list[dict[str, Any]], str],  # noqa: F811
) -> None:
    spans, endpoint = collector
    a = _start(tmp_path, shared, "a", endpoint)
    b = _start(tmp_path, shared, "b", endpoint)
    try:
        await _mcp_ready(b)
        created = await call(
            b,
            "POST",
            "/v1/runs",
            {"input": GUARDED_MCP},
            headers={"traceparent": f"00-{TRACE}-{CREATE_SPAN}-01"},
        )
        assert created.status == 202, created.text
        run_id = created.json["run_id"]
        await wait_status(a, run_id, "waiting_for_approval")
        answered = await call(
            a,
            "POST",
            f"/v1/runs/{run_id}/approval",
            {"choice": "deny"},
            headers={"traceparent": f"00-{TRACE}-{APPROVE_SPAN}-01"},
        )
        assert answered.status == 200, answered.text
        assert answered.json["resolved"] == 1

        # A forwarded the answer to B under the caller's span: both ends are in its trace.
        send = await eventually(
            lambda: _one(spans, name="send run.approval", trace=TRACE), what="A's send span"
        )
        assert send["service"] == "hermes-a" and send["parent"] == APPROVE_SPAN
        process = await eventually(
            lambda: _one(spans, name="process run.approval", trace=TRACE), what="B's process span"
        )
        assert process["service"] == "hermes-b" and process["parent"] == send["span"]
        assert process["attributes"]["hermes.run.id"].string_value == run_id

        await wait_status(a, run_id, "completed")
        # B's turn, its model calls and its tool calls belong to the caller's trace, and the MCP
        # server was handed the MCP tool call's own span.
        tool = await eventually(
            lambda: _one(spans, name="execute_tool mcp_tiny_trace_meta", trace=TRACE), what="the MCP span"
        )
        turn = await eventually(
            lambda: _one(spans, name="invoke_agent hermes", trace=TRACE), what="B's turn span"
        )
        assert turn["service"] == "hermes-b" and turn["parent"] == CREATE_SPAN
        assert tool["service"] == "hermes-b" and tool["parent"] == turn["span"]
        await eventually(
            lambda: any(s["name"].startswith("chat ") and s["parent"] == turn["span"] for s in spans),
            what="a chat span in B's turn",
        )
        events = await call(a, "GET", f"/v1/runs/{run_id}/events")
        assert f"traceparent: 00-{TRACE}-{tool['span']}-01" in events.text, events.text

        assert process["links"] == []  # the run's own trace: nothing to link

        # A malformed traceparent on a forwarded command is ignored: the steer is applied, and
        # its spans start a trace of their own, linked to the request that created the run.
        slow = await call(
            b, "POST", "/v1/runs", {"input": SLOW}, headers={"traceparent": f"00-{TRACE}-{SLOW_SPAN}-01"}
        )
        assert slow.status == 202, slow.text
        await wait_status(a, slow.json["run_id"], "running")
        steer = await call(
            a,
            "POST",
            f"/v1/runs/{slow.json['run_id']}/steer",
            {"input": "fewer words"},
            headers={"traceparent": f"00-{TRACE}-zz-01"},
        )
        assert steer.status == 200 and steer.json["accepted"] is True, steer.text
        steer_send = await eventually(
            lambda: _one(spans, name="send run.steer"), what="the steer's send span"
        )
        steer_process = await eventually(
            lambda: _one(spans, name="process run.steer"), what="the steer's process span"
        )
        assert steer_send["trace"] != TRACE and steer_send["parent"] == ""
        assert steer_process["trace"] == steer_send["trace"] and steer_process["parent"] == steer_send["span"]
        assert steer_process["links"] == [(TRACE, SLOW_SPAN)]
        # A stop from another trace (an operator's console): in that trace, linked to the run's.
        stopped = await call(
            a,
            "POST",
            f"/v1/runs/{slow.json['run_id']}/stop",
            headers={"traceparent": f"00-{OTHER_TRACE}-{STOP_SPAN}-01"},
        )
        assert stopped.status == 200, stopped.text
        stop_process = await eventually(
            lambda: _one(spans, name="process run.stop", trace=OTHER_TRACE), what="the stop's process span"
        )
        stop_send = await eventually(
            lambda: _one(spans, name="send run.stop", trace=OTHER_TRACE), what="the stop's send span"
        )
        assert stop_send["parent"] == STOP_SPAN
        assert stop_process["parent"] == stop_send["span"] and stop_process["links"] == [(TRACE, SLOW_SPAN)]
    finally:
        await asyncio.gather(asyncio.to_thread(a.stop), asyncio.to_thread(b.stop))
