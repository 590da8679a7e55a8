"""Meta requests: title refinement and compression summaries."""

from __future__ import annotations

from mock_helpers import Collect, assistant, user


async def test_title_directive_answers_a_title_request(collect: Collect) -> None:
    history = [
        user("fix the build [[title Build repair]] please"),
        assistant("You said: fix the build please"),
    ]
    reply = await collect(history, purpose="title")
    assert reply.text == "Build repair"
    assert reply.finish == "stop"


async def test_title_directive_has_no_effect_on_a_turn(collect: Collect) -> None:
    reply = await collect("fix the build [[title Build repair]] please")
    assert reply.text == "You said: fix the build please"


async def test_title_request_without_directive_answers_the_derived_title(collect: Collect) -> None:
    history = [
        user("[[reason r]] please   refactor the parser module into\nsmaller pieces today"),
        assistant("You said: …"),
        user("a later turn"),
    ]
    reply = await collect(history, purpose="title")
    assert reply.text == "please refactor the parser module into"


async def test_title_request_with_a_short_first_message(collect: Collect) -> None:
    reply = await collect("hello", purpose="title", model="alt")
    assert reply.text == "hello"


async def test_title_found_when_the_core_adds_an_instruction(collect: Collect) -> None:
    history = [
        user("deploy it [[title Deploy day]]"),
        assistant("You said: deploy it"),
        user("Suggest a short title for this conversation."),
    ]
    reply = await collect(history, purpose="title")
    assert reply.text == "Deploy day"


async def test_title_requests_ignore_effect_directives(collect: Collect) -> None:
    reply = await collect("x [[error boom]] [[tokens 4]] [[finish length]]", purpose="title")
    assert reply.text == "x"
    assert reply.finish == "stop"


async def test_compress_summarises_user_turns(collect: Collect) -> None:
    history = [
        user("please refactor the parser module"),
        assistant("You said: please refactor the parser module"),
        user("[[tokens 3]] now add tests for it"),
        assistant("t0 t1 t2"),
        user("ok"),
    ]
    reply = await collect(history, purpose="compress")
    assert reply.text == "Summary of 5 messages: please refactor the, now add tests, ok"
    assert reply.finish == "stop"
    assert reply.calls == []


async def test_compress_ignores_tool_directives(collect: Collect) -> None:
    history = [user('look [[tool read_file {"path": "a"}]]'), assistant("Done: x")]
    reply = await collect(history, purpose="compress")
    assert reply.calls == []
    assert reply.text == "Summary of 2 messages: look"
