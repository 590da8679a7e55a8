"""HTTP hygiene: unknown paths, Expect headers, read timeouts and the access log of closed streams."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import aiohttp

from tests.api.api_helpers import Reply, Server, assert_error, call


async def test_unknown_paths_are_404_with_or_without_a_key(server: Server) -> None:
    for method, path in [("GET", "/v1/openapi.json"), ("GET", "/no/such/path"), ("POST", "/v1/unknown")]:
        for auth in (False, "Bearer wrong-key-wrong-key-wrong", True):
            assert_error(await call(server, method, path, {}, auth=auth), 404, "not_found")
    # Known routes still ask for the key first.
    assert_error(await call(server, "GET", "/v1/models", auth=False), 401, "invalid_api_key")
    assert (await call(server, "GET", "/openapi.json", auth=False)).status == 200


async def test_an_unknown_expectation_gets_417_in_the_envelope(server: Server) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}]}
    for path in ("/v1/chat/completions", "/no/such/path"):
        reply = await call(server, "POST", path, body, headers={"Expect": "teapot"})
        err = assert_error(reply, 417, "expectation_failed")
        assert err["param"] == "Expect"
        assert reply.headers["Cache-Control"] == "no-store"
        assert reply.headers["X-Content-Type-Options"] == "nosniff"
    # 100-continue is still understood.
    async with aiohttp.ClientSession() as client:
        async with client.post(
            f"{server.base}/v1/chat/completions", json=body, headers=server.auth(), expect100=True
        ) as resp:
            assert resp.status == 200
            assert (await resp.json())["choices"][0]["message"]["content"] == "You said: hi"


async def _access_lines(server: Server, needle: str, timeout: float = 15) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        lines = [line for line in list(server.log) if "hermes.api.access" in line and needle in line]
        if lines or time.monotonic() > deadline:
            return lines
        await asyncio.sleep(0.05)


async def test_a_stream_the_client_closed_is_logged_with_the_status_it_got(
    make_server: Callable[..., Server],
) -> None:
    server = make_server()
    body = {"stream": True, "messages": [{"role": "user", "content": "slow [[delay 5000]]"}]}
    async with aiohttp.ClientSession() as client:
        resp = await client.post(f"{server.base}/v1/chat/completions", json=body, headers=server.auth())
        assert resp.status == 200
        assert (await resp.content.readline()).startswith(b"data: ")
        resp.close()
    lines = await _access_lines(server, "POST /v1/chat/completions")
    assert len(lines) == 1 and "POST /v1/chat/completions 200 " in lines[0], lines


async def _read_to_close(reader: asyncio.StreamReader, timeout: float) -> bytes:
    return await asyncio.wait_for(reader.read(), timeout)


def _parse(raw: bytes) -> Reply:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip()] = value.strip()
    return Reply(int(lines[0].split()[1]), headers, body.decode())


async def test_a_body_that_never_completes_gets_408_and_the_connection_closes(
    make_server: Callable[..., Server],
) -> None:
    server = make_server("[api_server]\nbody_timeout_s = 1\n")
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        started = time.monotonic()
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n"
            + f"Authorization: Bearer {server.key}\r\n\r\n".encode()
            + b'{"messages": ['
        )
        await writer.drain()
        raw = await _read_to_close(reader, 30)
        elapsed = time.monotonic() - started
    finally:
        writer.close()
    reply = _parse(raw)
    err = assert_error(reply, 408, "request_timeout")
    assert "1 s" in err["message"]
    assert reply.headers["Connection"].lower() == "close"
    assert 0.9 < elapsed < 25
    lines = await _access_lines(server, "POST /v1/chat/completions 408")
    assert lines


async def test_a_connection_that_trickles_its_headers_is_closed(make_server: Callable[..., Server]) -> None:
    server = make_server("[api_server]\nheader_timeout_s = 1\n")
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    started = time.monotonic()
    closed_after: float | None = None
    try:
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        await writer.drain()
        # One byte every 0.2 s keeps the connection busy but never finishes the head.
        while time.monotonic() - started < 20:
            try:
                data = await asyncio.wait_for(reader.read(100), 0.2)
            except ConnectionError:  # a reset: the server closed with our bytes unread
                closed_after = time.monotonic() - started
                break
            except TimeoutError:
                writer.write(b"a")
                try:
                    await writer.drain()
                except ConnectionError:
                    closed_after = time.monotonic() - started
                    break
                continue
            assert data == b""  # closed without an answer
            closed_after = time.monotonic() - started
            break
    finally:
        writer.close()
    assert closed_after is not None and 0.9 < closed_after < 10, closed_after
    # The server still serves everyone else.
    assert (await call(server, "GET", "/health", auth=False)).json["status"] == "ok"
