"""Malformed HTTP that aiohttp's parser rejects gets the docs/reference/api-server.md#error-envelope envelope,
sent over a raw socket (docs/reference/api-server.md#error-envelope, #error-codes)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import pytest

from hermes_api_server.middleware import SECURITY_HEADERS
from tests.api.api_helpers import Server, call


@dataclass
class RawReply:
    """A raw HTTP/1.x response read until the server closed the connection."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


async def send_raw(server: Server, data: bytes, timeout: float = 10) -> RawReply:
    """Write ``data`` as is, then read until the server closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(data)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return RawReply(status, headers, body)


def assert_envelope(reply: RawReply, code: str, param: str | None) -> None:
    assert reply.status == 400, reply
    assert reply.headers["content-type"] == "application/json; charset=utf-8"
    assert reply.headers["x-should-retry"] == "false"
    assert reply.headers["cache-control"] == "no-store"
    for name, value in SECURITY_HEADERS.items():
        assert reply.headers[name.lower()] == value, name
    assert reply.json == {
        "error": {
            "message": reply.json["error"]["message"],
            "type": "invalid_request_error",
            "param": param,
            "code": code,
        }
    }


def request(server: Server, *header_lines: str, method: str = "POST", body: bytes = b"{}") -> bytes:
    lines = [f"{method} /v1/chat/completions HTTP/1.1", "Host: 127.0.0.1", *header_lines]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@pytest.mark.parametrize("value", ["abc", "-1", "1e3", "12 34"])
async def test_malformed_content_length_gets_the_envelope(server: Server, value: str) -> None:
    data = request(server, f"Authorization: Bearer {server.key}", f"Content-Length: {value}")
    reply = await send_raw(server, data)
    assert_envelope(reply, "invalid_content_length", "Content-Length")
    assert "aiohttp" not in reply.headers["server"]


async def test_duplicate_content_length_gets_the_envelope(server: Server) -> None:
    reply = await send_raw(server, request(server, "Content-Length: 2", "Content-Length: 3"))
    assert_envelope(reply, "invalid_content_length", "Content-Length")


@pytest.mark.parametrize(
    "data",
    [
        b"GARBAGE\r\n\r\n",
        b"G(T /health HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /health HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n",
        b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
        b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nab\r\n0\r\n\r\n",
        b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    ],
    ids=["request-line", "method", "header-name", "cl-and-te", "chunk-size", "long-line"],
)
async def test_other_malformed_requests_get_the_envelope(server: Server, data: bytes) -> None:
    assert_envelope(await send_raw(server, data), "malformed_request", None)


async def test_a_malformed_authorization_line_is_never_echoed_or_logged(server: Server) -> None:
    reply = await send_raw(
        server, request(server, f"Authorization : Bearer {server.key}", "Content-Length: 2")
    )
    assert_envelope(reply, "malformed_request", None)
    assert server.key.encode() not in reply.body
    await asyncio.sleep(0.2)
    assert server.key not in "".join(server.log)
    # The connection was closed, not the server: the next request is served normally.
    assert (await call(server, "GET", "/health", auth=False)).status == 200
