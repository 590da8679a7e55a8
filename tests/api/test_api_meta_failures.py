"""A failed task prompt maps like a failed turn: 502 ``provider_error``, or 429/503 with
``Retry-After`` when waiting helps, never a 500 with a traceback
(docs/reference/api-server.md#chat-sessions)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.api.api_helpers import Server, assert_error, call
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import OPENAI, openai_error
from tests.timing import eventually

TASK = "### Task:\nGenerate 1-3 broad tags categorizing the main themes of the chat history.\n"


@pytest.mark.parametrize(
    ("status", "body", "headers", "expected", "retry_after"),
    [
        (429, openai_error("rate_limit_exceeded", "slow down"), {"Retry-After": "7"}, 429, "7"),
        (429, openai_error("insufficient_quota", "quota exhausted"), {}, 502, None),
        (500, openai_error("server_error", "upstream broke"), {}, 503, "1"),
        (400, openai_error("invalid_request_error", "bad request"), {}, 502, None),
    ],
    ids=["rate-limited", "quota", "upstream-5xx", "rejected"],
)
async def test_a_failed_task_prompt_maps_like_a_turn(
    make_server: Callable[..., Server],
    status: int,
    body: dict[str, object],
    headers: dict[str, str],
    expected: int,
    retry_after: str | None,
) -> None:
    async with FakeUpstream() as up:
        up.json("POST", OPENAI.chat_path, body, status=status, headers=headers)
        srv = make_server(
            f'model = "openai:{OPENAI.model}"\n[providers.openai]\n'
            f'api_key = "{OPENAI.key}"\nbase_url = "{OPENAI.root(up.url)}"\n'
        )
        task = {"messages": [{"role": "user", "content": TASK}]}
        reply = await call(srv, "POST", "/v1/chat/completions", task, headers={"X-Hermes-Session-Id": "s-1"})
        err = assert_error(reply, expected, "provider_error")
        assert reply.headers.get("Retry-After") == retry_after
        assert str(body["error"]["message"]) in err["message"]  # type: ignore[index]
        assert [r.path for r in up.requests] == [OPENAI.chat_path]  # one call, no retries here
    await eventually(lambda: "task prompt failed: provider_error" in "".join(srv.log))
    log = "".join(srv.log)
    assert "Traceback" not in log and "internal_error" not in log
