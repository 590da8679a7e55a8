"""A turn that fails after text gets ``X-Hermes-Error``, whatever the upstream's message holds.

The header quotes the failure; a control character in it (a NUL or an escape from the upstream)
made aiohttp refuse the header, so the client got no response at all although the turn ran.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.api.api_helpers import Server, call
from tests.providers.upstream_fakes import FakeUpstream, openai_frame
from tests.providers.vendors import delta


@pytest.mark.parametrize("junk", ["\x00", "\x1b[31m", "\r", "\x7f", "\x85", "\u2028"])
async def test_a_control_character_in_the_failure_still_gets_a_response(
    make_server: Callable[..., Server], junk: str
) -> None:
    async with FakeUpstream() as up:
        frames = [delta(content="Half an answer"), openai_frame({"error": {"message": f"boom{junk}done"}})]
        up.replies("/v1/chat/completions", [frames])
        srv = make_server(
            f'model = "openai:gpt-4o"\n[providers.openai]\napi_key = "sk-test-0123456789abcdef"\n'
            f'base_url = "{up.url}/v1"\n'
        )
        body = {"model": "hermes-agent", "messages": [{"role": "user", "content": "hi"}]}
        reply = await call(srv, "POST", "/v1/chat/completions", body)
        assert reply.status == 200, reply.text
        assert reply.json["choices"][0]["message"]["content"] == "Half an answer"
        assert reply.json["choices"][0]["finish_reason"] == "error"
        header = reply.headers["X-Hermes-Error"]
        assert "boom" in header and "done" in header
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c == "\u2028" for c in header), header
