"""Keepalives, Responses disconnects, chat idempotency, meta-requests and draining."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp

from hermes_api_server.turns import EventPump
from hermes_core import TextDelta, TurnCompleted
from tests.api.api_helpers import Server, assert_error, call, parse_sse
from tests.timing import eventually


class _SlowTurn:
    """Stands in for a core Turn whose provider is silent for a while."""

    async def events(self) -> AsyncIterator[Any]:
        await asyncio.sleep(0.25)
        yield TextDelta(session_id="s", turn_id="t", segment_id="g", text="late")


async def test_event_pump_yields_keepalives_while_the_turn_is_silent() -> None:
    pump = EventPump(_SlowTurn())  # type: ignore[arg-type]
    seen: list[Any] = []
    async for batch in pump.batches(keepalive_s=0.05):
        seen.append(batch)
    await pump.close()
    assert seen[0] is None and seen.count(None) >= 3
    assert isinstance(seen[-1][0], TextDelta)
    assert not any(isinstance(e, TurnCompleted) for b in seen if b for e in b)


class _BatchTurn:
    """Stands in for a turn that reads in batches but knows nothing of quiet events."""

    def __init__(self) -> None:
        self.batches: list[list[Any]] = [
            [TextDelta(session_id="s", turn_id="t", segment_id="g", text="x")],
            [],
        ]

    async def next_events(self, timeout: float | None = None) -> list[Any] | None:
        return self.batches.pop(0)


async def test_event_pump_quiet_is_a_no_op_for_a_turn_without_quiet_events() -> None:
    pump = EventPump(_BatchTurn())  # type: ignore[arg-type]
    pump.quiet(frozenset({TurnCompleted}))
    first = await pump.next(1.0)
    assert first is not None and isinstance(first[0], TextDelta)
    assert await pump.next(1.0) == []


async def test_responses_disconnect_stores_an_incomplete_snapshot(server: Server) -> None:
    body = {"input": "[[tokens 300]] [[delay 20]] go", "stream": True}
    async with aiohttp.ClientSession() as client:
        resp = await client.post(server.base + "/v1/responses", json=body, headers=server.auth())
        response_id = None
        async for line in resp.content:
            if line.startswith(b"data: ") and b'"response.output_text.delta"' in line:
                break
            if line.startswith(b"data: ") and b'"response.created"' in line:
                response_id = line.split(b'"id":"', 1)[1].split(b'"', 1)[0].decode()
        resp.close()
    assert response_id

    async def incomplete() -> Any:
        stored = await call(server, "GET", f"/v1/responses/{response_id}")
        return stored if stored.json["status"] == "incomplete" else None

    stored = await eventually(incomplete, what="the response to be stored as incomplete")
    assert stored.json["incomplete_details"] == {"reason": "interrupted"}
    chained = await call(
        server, "POST", "/v1/responses", {"input": "next", "previous_response_id": response_id}
    )
    assert chained.status == 200


async def test_chat_idempotency_replays_and_conflicts(server: Server) -> None:
    body = {"messages": [{"role": "user", "content": "[[tokens 5]] once"}]}
    headers = {"Idempotency-Key": "chat-key-1"}
    first, twin = await asyncio.gather(
        call(server, "POST", "/v1/chat/completions", body, headers=headers),
        call(server, "POST", "/v1/chat/completions", body, headers=headers),
    )
    assert first.json == twin.json
    assert "Idempotency-Replayed" in first.headers or "Idempotency-Replayed" in twin.headers
    other = await call(
        server,
        "POST",
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "x"}]},
        headers=headers,
    )
    assert_error(other, 409, "idempotency_key_conflict")


async def test_meta_requests_are_answered_without_a_session(server: Server) -> None:
    task = "### Task:\nGenerate a concise title for the chat.\n### Chat History:\nUSER: hi"
    reply = await call(
        server, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": task}]}
    )
    assert reply.status == 200
    assert reply.json["hermes"]["meta_request"] is True
    assert reply.json["choices"][0]["message"]["content"].startswith("You said: ### Task:")
    assert "X-Hermes-Session-Id" not in reply.headers


async def test_sigterm_drains_refuses_new_work_and_interrupts_streams(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server("[api_server]\nshutdown_grace_s = 1\n")
    body = {"stream": True, "messages": [{"role": "user", "content": "[[tokens 400]] [[delay 20]] long"}]}
    async with aiohttp.ClientSession() as client:
        resp = await client.post(srv.base + "/v1/chat/completions", json=body, headers=srv.auth())
        await resp.content.readline()
        srv.proc.send_signal(signal.SIGTERM)
        # The server announces the drain on stderr in the same step that starts refusing work.
        await eventually(lambda: any("draining:" in line for line in srv.log), what="the drain to start")
        refused = await call(
            srv, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}
        )
        assert_error(refused, 503, "gateway_draining")
        assert refused.headers["Retry-After"] == "1"
        assert (await call(srv, "GET", "/v1/models")).status == 200
        text = (await resp.read()).decode()
    frames = [f["data"] for f in parse_sse(text) if "data" in f]
    assert frames[-1] == "[DONE]"
    final = frames[-2]
    assert final["choices"][0]["finish_reason"] == "error"
    assert final["hermes"]["error_code"] == "interrupted"
    assert srv.proc.wait(15) == 0
