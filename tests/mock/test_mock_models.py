"""The four mock models: their catalogue entries and the reply each gives (docs/mock-provider.md, first
table)."""

from __future__ import annotations

import pytest
from mock_helpers import Collect, assistant, tool, user

from hermes_core import ModelInfo, Provider, ProviderError, ToolCallRequest
from hermes_mock.plugin import make_provider

MODELS = ["echo", "script", "alt", "history"]


async def test_list_models_and_probe_offer_four_text_only_models() -> None:
    provider = make_provider({}, name="mock", preset=None)
    expected = [ModelInfo(id=m, context_window=32768, vision=False) for m in MODELS]
    assert isinstance(provider, Provider)
    assert await provider.list_models() == expected
    assert await provider.probe(0.5) == expected
    await provider.aclose()


async def test_unknown_model_is_a_non_retryable_upstream_error(collect: Collect) -> None:
    with pytest.raises(ProviderError) as caught:
        await collect("hi", model="gpt-4o")
    assert caught.value.kind == "upstream"
    assert caught.value.retryable is False
    assert "gpt-4o" in caught.value.message


async def test_echo_replies_with_the_latest_user_text(collect: Collect) -> None:
    history = [user("first question"), assistant("You said: first question"), user("second one")]
    reply = await collect(history, model="echo")
    assert reply.text == "You said: second one"
    assert reply.finish == "stop"
    assert reply.calls == []
    assert reply.reasoning == []


async def test_script_is_identical_to_echo(collect: Collect) -> None:
    text = "run the [[finish length]] script please"
    echo = await collect(text, model="echo")
    script = await collect(text, model="script")
    assert script.chunks == echo.chunks
    assert script.text == "You said: run the script please"


async def test_alt_prefixes_the_echo_reply(collect: Collect) -> None:
    reply = await collect("hello there", model="alt")
    assert reply.text == "alt: You said: hello there"
    assert reply.deltas[0] == "alt:"


async def test_history_lists_every_user_turn_without_directives(collect: Collect) -> None:
    history = [
        user("first [[reason why]] turn"),
        assistant("You said: first turn"),
        user("second turn"),
        assistant("You said: second turn"),
        user("[[delay 0]] third"),
    ]
    reply = await collect(history, model="history")
    assert reply.text == "Turns: first turn | second turn | third"


async def test_history_with_a_single_turn(collect: Collect) -> None:
    reply = await collect("only me", model="history")
    assert reply.text == "Turns: only me"


async def test_echo_of_a_message_that_was_only_a_directive(collect: Collect) -> None:
    reply = await collect("[[reason thinking]]")
    assert reply.text == "You said: "
    assert reply.reasoning == ["thinking"]


@pytest.mark.parametrize("model", MODELS)
async def test_every_model_honours_the_directives(collect: Collect, model: str) -> None:
    reply = await collect("hi [[reason r]] [[finish refusal]]", model=model)
    assert reply.reasoning == ["r"]
    assert reply.finish == "refusal"
    with pytest.raises(ProviderError):
        await collect("hi [[error boom]]", model=model)
    tokens = await collect("[[tokens 3]]", model=model)
    expected = "alt: t0 t1 t2" if model == "alt" else "t0 t1 t2"
    assert tokens.text == expected


@pytest.mark.parametrize("model", MODELS)
async def test_every_model_answers_done_after_tool_results(collect: Collect, model: str) -> None:
    call = ToolCallRequest("mock_1_1_0", "terminal", '{"command": "ls"}')
    history = [
        user('[[tool terminal {"command": "ls"}]]'),
        assistant("", [call]),
        tool("mock_1_1_0", "a.txt\nb.txt"),
    ]
    reply = await collect(history, model=model)
    expected = "alt: Done: a.txt" if model == "alt" else "Done: a.txt"
    assert reply.text == expected


async def test_one_shot_behaves_like_a_turn_without_tools(collect: Collect) -> None:
    reply = await collect('summarise [[tool read_file {"path": "x"}]] this', purpose="one_shot")
    assert reply.calls == []
    assert reply.text == "You said: summarise this"
    assert reply.finish == "stop"
    reasoned = await collect("q [[reason r]] [[finish length]]", model="alt", purpose="one_shot")
    assert (reasoned.text, reasoned.reasoning, reasoned.finish) == ("alt: You said: q", ["r"], "length")
