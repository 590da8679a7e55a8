"""Bodies that Python's ``json`` accepts but JSON does not: lone surrogates and NaN/Infinity.

A ``"\\ud800"`` escape without its pair is no character; before, it crashed the request with a
500 (the text cannot be encoded to hash, store or forward it). Both are a 400 ``invalid_json``
now, on every route, and nothing runs.
"""

from __future__ import annotations

import pytest

from tests.api.api_helpers import Server, assert_error, call

BODIES = {
    "/v1/chat/completions": b'{"model":"hermes-agent","messages":[{"role":"user","content":"%s"}]}',
    "/v1/responses": b'{"model":"hermes-agent","input":"%s"}',
    "/v1/runs": b'{"input":"%s"}',
}


@pytest.mark.parametrize("path", list(BODIES))
@pytest.mark.parametrize("text", [b"x\\ud800y", b"\\udfff", b"end \\ud83d"])
async def test_a_lone_surrogate_is_invalid_json(server: Server, path: str, text: bytes) -> None:
    reply = await call(
        server, "POST", path, data=BODIES[path] % text, headers={"Content-Type": "application/json"}
    )
    error = assert_error(reply, 400, "invalid_json")
    assert "surrogate" in error["message"]


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
async def test_nan_and_infinity_are_invalid_json(server: Server, literal: bytes) -> None:
    body = b'{"model":"hermes-agent","messages":[{"role":"user","content":"hi"}],"temperature":%s}' % literal
    reply = await call(server, "POST", "/v1/chat/completions", data=body)
    assert_error(reply, 400, "invalid_json")


async def test_raw_surrogate_bytes_are_invalid_json(server: Server) -> None:
    reply = await call(
        server, "POST", "/v1/chat/completions", data=BODIES["/v1/chat/completions"] % b"x\xed\xa0\x80y"
    )
    assert_error(reply, 400, "invalid_json")


async def test_an_escaped_surrogate_pair_is_one_character(server: Server) -> None:
    body = BODIES["/v1/chat/completions"] % b"smile \\ud83d\\ude00"
    reply = await call(server, "POST", "/v1/chat/completions", data=body)
    assert reply.status == 200, reply.text
    assert reply.json["choices"][0]["message"]["content"] == "You said: smile \U0001f600"
