"""Frontend task prompts (``### Task:``) reach a real HTTP provider exactly as the frontend sent them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.api.api_helpers import Server, call
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import VENDORS, Vendor

TASK = "### Task:\nGenerate a concise title for the chat.\n### Chat History:\nUSER: the tide tables"


@pytest.mark.parametrize("vendor", VENDORS, ids=lambda v: v.name)
async def test_a_task_prompt_is_one_upstream_call_with_the_frontends_messages(
    vendor: Vendor, make_server: Callable[..., Server]
) -> None:
    async with FakeUpstream() as up:
        up.replies(vendor.chat_path, [vendor.reply("Tide tables")])
        srv = make_server(
            f'model = "{vendor.name}:{vendor.model}"\n'
            f"[providers.{vendor.name}]\n"
            f'api_key = "{vendor.key}"\nbase_url = "{vendor.root(up.url)}"\n'
        )
        body = {
            "messages": [
                {"role": "system", "content": "Answer in English."},
                {"role": "user", "content": "earlier question"},
                {"role": "assistant", "content": "earlier answer"},
                {"role": "user", "content": TASK},
            ]
        }
        reply = await call(srv, "POST", "/v1/chat/completions", body)
        assert reply.status == 200, reply.text
        assert reply.json["hermes"]["meta_request"] is True
        assert reply.json["choices"][0]["message"]["content"] == "Tide tables"
        assert "X-Hermes-Session-Id" not in reply.headers
        chat_calls = [r for r in up.requests if r.path == vendor.chat_path]
        assert len(chat_calls) == 1
        sent = chat_calls[0].body
        assert sent["model"] == vendor.model
        assert "tools" not in sent
        if vendor.name == "openai":
            assert sent["messages"] == [
                {"role": "system", "content": "Answer in English."},
                {"role": "user", "content": "earlier question"},
                {"role": "assistant", "content": "earlier answer"},
                {"role": "user", "content": TASK},
            ]
        else:
            system = sent["system"]
            text = system if isinstance(system, str) else "".join(b["text"] for b in system)
            assert text == "Answer in English."
            roles = [m["role"] for m in sent["messages"]]
            assert roles == ["user", "assistant", "user"]
            last = sent["messages"][-1]["content"]
            last_text = last if isinstance(last, str) else "".join(b["text"] for b in last)
            assert last_text == TASK
