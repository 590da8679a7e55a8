"""Cross-cutting HTTP rules: auth, the envelope, security headers, CORS, limits
(docs/reference/api-server.md#http-rules; checks 2, 5, 6)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import aiohttp

from tests.api.api_helpers import Server, assert_error, call
from tests.timing import eventually

BEARER_ROUTES = [
    ("GET", "/health/detailed"),
    ("GET", "/v1/models"),
    ("GET", "/v1/models/hermes-agent"),
    ("GET", "/api/model/options"),
    ("GET", "/v1/capabilities"),
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/responses"),
    ("GET", "/v1/responses/resp_x"),
    ("DELETE", "/v1/responses/resp_x"),
    ("GET", "/v1/responses/resp_x/input_items"),
    ("POST", "/v1/responses/resp_x/cancel"),
    ("POST", "/v1/runs"),
    ("GET", "/v1/runs"),
    ("GET", "/v1/runs/run_x"),
    ("GET", "/v1/runs/run_x/events"),
    ("POST", "/v1/runs/run_x/steer"),
    ("POST", "/v1/runs/run_x/approval"),
    ("POST", "/v1/runs/run_x/stop"),
    ("POST", "/v1/browser-control/register"),
]
SECURITY = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Server": "hermes",
}


async def test_every_bearer_route_answers_401_first(server: Server) -> None:
    doc = (await call(server, "GET", "/openapi.json", auth=False)).json
    documented = [
        (method.upper(), path.replace("{", "x_").replace("}", ""))
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if op.get("security") != []
    ]
    assert len(documented) == 22
    bad = [None, "Bearer wrong-key-wrong-key-wrong", "Bearer kéy-nön-ascii", "Basic abc", "Bearer"]
    for method, path in [*documented, *BEARER_ROUTES]:
        for header in bad:
            reply = await call(server, method, path, {}, auth=header or False)
            err = assert_error(reply, 401, "invalid_api_key")
            assert err["param"] is None
            assert reply.headers["WWW-Authenticate"] == 'Bearer realm="hermes"'


async def test_bearer_scheme_is_case_insensitive_and_query_keys_are_ignored(server: Server) -> None:
    assert (await call(server, "GET", "/v1/models", auth=f"bearer   {server.key}  ")).status == 200
    reply = await call(server, "GET", f"/v1/models?api_key={server.key}", auth=False)
    assert_error(reply, 401, "invalid_api_key")


async def test_unknown_path_and_wrong_method_use_the_envelope(server: Server) -> None:
    assert_error(await call(server, "GET", "/v1/nothing"), 404, "not_found")
    reply = await call(server, "GET", "/v1/chat/completions")
    assert_error(reply, 405, "method_not_allowed")
    assert "POST" in reply.headers["Allow"]


async def test_security_headers_on_ok_error_sse_and_openapi(server: Server) -> None:
    replies = [
        await call(server, "GET", "/v1/models"),
        await call(server, "GET", "/v1/models", auth=False),
        await call(server, "GET", "/v1/nothing"),
        await call(server, "GET", "/openapi.json", auth=False),
        await call(
            server,
            "POST",
            "/v1/chat/completions",
            {"stream": True, "messages": [{"role": "user", "content": "hi"}]},
        ),
        await call(server, "POST", "/v1/chat/completions", headers={"Content-Length": "99999999"}, data=b"x"),
    ]
    assert [r.status for r in replies] == [200, 401, 404, 200, 200, 413]
    for reply in replies:
        for name, value in SECURITY.items():
            assert reply.headers.get(name) == value, (name, reply.status)
    assert replies[0].headers["Cache-Control"] == "no-store"
    assert replies[4].headers["Cache-Control"] == "no-cache"
    assert replies[4].headers["Content-Type"].startswith("text/event-stream")


async def test_an_origin_is_refused_while_cors_is_off(server: Server) -> None:
    reply = await call(server, "GET", "/v1/models", headers={"Origin": "https://evil.example"})
    assert_error(reply, 403, "origin_not_allowed")
    preflight = await call(
        server,
        "OPTIONS",
        "/v1/chat/completions",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
        auth=False,
    )
    assert_error(preflight, 403, "origin_not_allowed")


async def test_allowed_origin_gets_preflight_and_headers_on_json_and_sse(
    make_server: Callable[..., Server],
) -> None:
    origin = "http://localhost:3000"
    srv = make_server(f'[api_server]\ncors_origins = ["{origin}"]\n')
    preflight = await call(
        srv,
        "OPTIONS",
        "/v1/chat/completions",
        headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
        auth=False,
    )
    assert preflight.status == 200
    assert preflight.headers["Access-Control-Allow-Origin"] == origin
    assert "X-Hermes-Session-Key" in preflight.headers["Access-Control-Allow-Headers"]
    assert "Last-Event-ID" in preflight.headers["Access-Control-Allow-Headers"]
    json_reply = await call(srv, "GET", "/v1/models", headers={"Origin": origin})
    sse = await call(
        srv,
        "POST",
        "/v1/chat/completions",
        {"stream": True, "messages": [{"role": "user", "content": "hi"}]},
        headers={"Origin": origin},
    )
    for reply in (json_reply, sse):
        assert reply.headers["Access-Control-Allow-Origin"] == origin
        assert reply.headers["Vary"] == "Origin"
        assert "X-Hermes-Session-Id" in reply.headers["Access-Control-Expose-Headers"]
    other = await call(srv, "GET", "/v1/models", headers={"Origin": "http://other"})
    assert_error(other, 403, "origin_not_allowed")


async def test_body_over_the_cap_gets_413_with_length_or_chunked(server: Server) -> None:
    big = b'{"messages": "' + b"x" * 10_000_100 + b'"}'
    reply = await call(server, "POST", "/v1/chat/completions", data=big)
    assert_error(reply, 413, "body_too_large")

    async def chunks() -> Any:
        for _ in range(11):
            yield b"x" * 1_000_000

    async with aiohttp.ClientSession() as client:
        async with client.post(
            server.base + "/v1/chat/completions", data=chunks(), headers=server.auth()
        ) as resp:
            assert resp.status == 413
            assert (await resp.json())["error"]["code"] == "body_too_large"


async def test_bad_json_and_non_object_bodies_get_400(server: Server) -> None:
    for data in (b"{nope", b"[1, 2]", b'"text"', b"\xff\xfe"):
        assert_error(await call(server, "POST", "/v1/chat/completions", data=data), 400, "invalid_json")
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n"
        + f"Authorization: Bearer {server.key}\r\n\r\n{{}}".encode()
    )
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    assert status_line.split()[1] == b"400"


async def test_concurrency_cap_gives_429_but_never_to_replays_or_bad_bodies(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server("[api_server]\nmax_concurrent_runs = 1\n")
    slow = await call(
        srv,
        "POST",
        "/v1/runs",
        {"input": "[[tokens 20]] [[delay 40]] go"},
        headers={"Idempotency-Key": "slow-1"},
    )
    assert slow.status == 202
    chat = await call(srv, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
    err = assert_error(chat, 429, "rate_limit_exceeded")
    assert "max 1" in err["message"]
    assert chat.headers["Retry-After"] == "1"
    replay = await call(
        srv,
        "POST",
        "/v1/runs",
        {"input": "[[tokens 20]] [[delay 40]] go"},
        headers={"Idempotency-Key": "slow-1"},
    )
    assert replay.status == 202 and replay.json["replayed"] is True
    bad = await call(srv, "POST", "/v1/chat/completions", {"messages": []})
    assert_error(bad, 400, "invalid_value")
    run_id = slow.json["run_id"]

    async def completed() -> bool:
        return bool((await call(srv, "GET", f"/v1/runs/{run_id}")).json["status"] == "completed")

    await eventually(completed, interval=0.1, what="the slow run to complete")
    ok = await call(srv, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
    assert ok.status == 200, ok.text
    assert json.loads(ok.text)["choices"][0]["message"]["content"] == "You said: hi"


async def test_deeply_nested_bodies_get_400_invalid_json(server: Server) -> None:
    deep_array = b"[" * 100_000 + b"]" * 100_000
    deep_field = b'{"messages":' + b"[" * 5_000 + b"]" * 5_000 + b"}"
    # Deep enough to be refused, shallow enough for the decoder: refused by the depth limit.
    middling = json.dumps({"model": "hermes-agent", "input": "hi", "metadata": {"a": _nest(200)}}).encode()
    for path in ("/v1/chat/completions", "/v1/responses", "/v1/runs"):
        for data in (deep_array, deep_field, middling):
            err = assert_error(await call(server, "POST", path, data=data), 400, "invalid_json")
            assert "nested deeper than 64 levels" in err["message"]
    # The limit leaves room for any real request.
    ok = {"model": "hermes-agent", "messages": [{"role": "user", "content": "hi"}], "x": _nest(60)}
    assert (await call(server, "POST", "/v1/chat/completions", ok)).status == 200


def _nest(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value
