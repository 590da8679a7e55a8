"""Two chats with one opener, through the ``openai`` provider: each later turn reaches the upstream
with its own chat's history, exactly, whether the client got the turn streamed (every text delta
of a tool-using turn, joined) or as JSON (the final text) (docs/reference/api-server.md#chat-sessions).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai

from tests.api.api_helpers import Server
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream
from tests.providers.vendors import OPENAI, delta
from tests.timing import scaled


def tool_call(name: str, arguments: dict[str, str], text: str) -> list[bytes]:
    """A streamed reply that says ``text`` and then calls one tool."""
    call = {"index": 0, "id": f"call_{name}", "type": "function"}
    call["function"] = {"name": name, "arguments": json.dumps(arguments)}  # type: ignore[assignment]
    return [delta(content=text), delta(tool_calls=[call]), delta(finish_reason="tool_calls"), OPENAI_DONE]


def visible(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The user and assistant messages of an upstream request, in order."""
    return [(m["role"], m["content"]) for m in body["messages"] if m["role"] in ("user", "assistant")]


async def chat(server: Server, messages: list[dict[str, str]], stream: bool) -> tuple[str, str]:
    client = openai.AsyncOpenAI(
        base_url=f"{server.base}/v1", api_key=server.key, max_retries=0, timeout=scaled(60)
    )
    async with client:
        if not stream:
            raw = await client.chat.completions.with_raw_response.create(
                model="hermes-agent", messages=messages
            )  # type: ignore[arg-type]
            return raw.parse().choices[0].message.content or "", raw.headers["X-Hermes-Session-Id"]
        async with client.chat.completions.with_streaming_response.create(
            model="hermes-agent",
            messages=messages,  # type: ignore[arg-type]
            stream=True,
        ) as reply:
            text = [c.choices[0].delta.content or "" async for c in await reply.parse() if c.choices]
            return "".join(text), reply.headers["X-Hermes-Session-Id"]


async def test_each_chat_reaches_the_upstream_with_its_own_history(
    make_server: Callable[..., Server],
) -> None:
    async with FakeUpstream() as up:
        up.replies(
            OPENAI.chat_path,
            [
                tool_call("write_file", {"path": "note.txt", "content": "A's note"}, "Let me write."),
                OPENAI.reply("Saved."),
                OPENAI.reply("Hello from B."),
                OPENAI.reply("A's second answer."),
                tool_call("read_file", {"path": "note.txt"}, "Looking."),
                OPENAI.reply("Nothing there."),
                OPENAI.reply("B's third answer."),
            ],
        )
        server = make_server(
            f'model = "openai:{OPENAI.model}"\n'
            f'[providers.openai]\napi_key = "{OPENAI.key}"\nbase_url = "{OPENAI.root(up.url)}"\n'
        )
        hi = {"role": "user", "content": "hi"}
        a_said, a_id = await chat(server, [hi], stream=True)
        assert a_said == "Let me write.Saved."  # every text delta of the turn, as streamed
        b_said, b_id = await chat(server, [hi], stream=False)
        assert b_said == "Hello from B." and b_id != a_id

        a_next = [hi, {"role": "assistant", "content": a_said}, {"role": "user", "content": "what now?"}]
        assert await chat(server, a_next, stream=True) == ("A's second answer.", a_id)
        b_look = [hi, {"role": "assistant", "content": b_said}, {"role": "user", "content": "look for it"}]
        said, same = await chat(server, b_look, stream=False)
        assert (said, same) == ("Nothing there.", b_id)  # JSON: the final text only
        b_next = [*b_look, {"role": "assistant", "content": said}, {"role": "user", "content": "ok"}]
        assert await chat(server, b_next, stream=False) == ("B's third answer.", b_id)

        calls = [r.body for r in up.requests if r.path == OPENAI.chat_path]
        assert len(calls) == 7
        assert visible(calls[3]) == [
            ("user", "hi"),
            ("assistant", "Let me write.Saved."),
            ("user", "what now?"),
        ]
        # B's tool ran in B's folder: A's note is not there.
        tool_results = [m for m in calls[5]["messages"] if m["role"] == "tool"]
        assert len(tool_results) == 1 and "A's note" not in tool_results[0]["content"]
        assert visible(calls[6]) == [
            ("user", "hi"),
            ("assistant", "Hello from B."),
            ("user", "look for it"),
            ("assistant", "Nothing there."),
            ("user", "ok"),
        ]
        assert (server.home / "workspaces" / a_id / "note.txt").read_text() == "A's note"
