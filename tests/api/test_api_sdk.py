"""The official ``openai`` SDK against a real server (checks 24-28)."""

from __future__ import annotations

import asyncio

import openai
import pytest

from tests.api.api_helpers import Server


def client(server: Server, key: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base}/v1", api_key=key or server.key, max_retries=0)


async def test_sdk_models_auth_and_chat(server: Server) -> None:
    def run() -> None:
        sdk = client(server)
        assert sdk.models.list().data[0].id == "hermes-agent"
        with pytest.raises(openai.AuthenticationError):
            client(server, "wrong-key-wrong-key-wrong").models.list()
        done = sdk.chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": "hi sdk"}]
        )
        assert done.choices[0].message.content == "You said: hi sdk"
        text = ""
        stream = sdk.chat.completions.create(
            model="hermes-agent",
            messages=[{"role": "user", "content": 'go [[tool terminal {"command":"echo sdk"}]]'}],
            stream=True,
        )
        for chunk in stream:
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
        assert text == "Done: sdk"

    await asyncio.to_thread(run)


async def test_sdk_responses_create_retrieve_stream_chain_delete(server: Server) -> None:
    def run() -> None:
        sdk = client(server)
        made = sdk.responses.create(model="hermes-agent", input="hello responses")
        assert made.status == "completed" and made.output_text == "You said: hello responses"
        assert sdk.responses.retrieve(made.id).output_text == made.output_text
        deltas = ""
        with sdk.responses.stream(
            model="hermes-agent", input='x [[tool terminal {"command":"echo s"}]]'
        ) as s:
            for event in s:
                if event.type == "response.output_text.delta":
                    deltas += event.delta
            final = s.get_final_response()
        assert deltas == final.output_text == "Done: s"
        assert [item.type for item in final.output] == ["function_call", "function_call_output", "message"]
        r1 = sdk.responses.create(model="mock:history", input="first")
        r2 = sdk.responses.create(model="mock:history", input="second", previous_response_id=r1.id)
        assert r2.output_text == "Turns: first | second"
        sdk.responses.delete(r2.id)
        with pytest.raises(openai.NotFoundError):
            sdk.responses.retrieve(r2.id)

    await asyncio.to_thread(run)


FAILING_TOOLS = [
    '[[tool read_file {"path": "missing.txt"}]]',
    '[[tool terminal {"command": "false"}]]',
]


@pytest.mark.parametrize("directive", FAILING_TOOLS)
async def test_sdk_chat_stream_survives_a_failing_tool(server: Server, directive: str) -> None:
    # The SDK raises APIError on any frame whose top-level "error" is truthy; a failed tool's
    # progress frame must not end the user's stream.
    def run() -> tuple[str, str | None]:
        text = ""
        finish = None
        stream = client(server).chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": f"try {directive}"}], stream=True
        )
        for chunk in stream:
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
                finish = chunk.choices[0].finish_reason or finish
        return text, finish

    text, finish = await asyncio.to_thread(run)
    assert text.startswith("Done: ") and len(text) > len("Done: ")
    assert finish == "stop"


@pytest.mark.parametrize("directive", FAILING_TOOLS)
async def test_sdk_responses_stream_survives_a_failing_tool(server: Server, directive: str) -> None:
    def run() -> tuple[str, str, list[str]]:
        deltas = ""
        with client(server).responses.stream(model="hermes-agent", input=f"try {directive}") as s:
            for event in s:
                if event.type == "response.output_text.delta":
                    deltas += event.delta
            final = s.get_final_response()
        return deltas, final.output_text, [item.type for item in final.output]

    deltas, output, kinds = await asyncio.to_thread(run)
    assert deltas == output and output.startswith("Done: ") and len(output) > len("Done: ")
    assert kinds == ["function_call", "function_call_output", "message"]
