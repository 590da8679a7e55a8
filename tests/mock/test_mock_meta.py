"""The core's own requests: titles and compression summaries, recognised from their instruction.

Each test sends the mock what the core sends any provider (built by ``hermes_core.meta_prompts``
from stored rows) and never relies on ``purpose``: the mock answers from the request itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from mock_helpers import Collect, Reply, assistant, user

from hermes_core import ChatMessage, ChatRequest, NewRow, Row, StoredToolCall
from hermes_core.history import materialize
from hermes_core.meta_prompts import MetaRequest, summary_request, title_request
from hermes_mock.plugin import make_provider


def rows(*messages: tuple[str, str]) -> list[Row]:
    """Stored rows of (role, text) pairs."""
    return [materialize("s", NewRow(role=r, content=t), i + 1) for i, (r, t) in enumerate(messages)]


async def ask(request: MetaRequest, *, purpose: str = "turn", model: str = "echo") -> Reply:
    """Send a core request through the mock, with a ``purpose`` that says nothing about it."""
    messages = tuple(ChatMessage(m.role, m.text) for m in request.messages)
    provider = make_provider({}, name="mock", preset=None)
    chat = ChatRequest(model=model, messages=messages, system=request.system, purpose=purpose)  # type: ignore[arg-type]
    reply = Reply()
    async for chunk in provider.stream(chat):
        reply.chunks.append(chunk)
    return reply


async def test_title_directive_answers_a_title_request() -> None:
    history = rows(("user", "fix the build [[title Build repair]] please"), ("assistant", "You said: …"))
    reply = await ask(title_request(history))
    assert reply.text == "Build repair"
    assert reply.finish == "stop"


async def test_title_directive_has_no_effect_on_a_turn(collect: Collect) -> None:
    reply = await collect("fix the build [[title Build repair]] please")
    assert reply.text == "You said: fix the build please"


async def test_a_title_purpose_without_the_instruction_is_an_ordinary_reply(collect: Collect) -> None:
    history: Sequence[ChatMessage] = [user("fix the build [[title Build repair]] please"), assistant("x")]
    reply = await collect(history, purpose="title")
    assert reply.text == "You said: fix the build please"


async def test_title_request_without_directive_answers_the_derived_title() -> None:
    history = rows(
        ("user", "[[reason r]] please   refactor the parser module into\nsmaller pieces today"),
        ("assistant", "You said: …"),
        ("user", "a later turn"),
    )
    reply = await ask(title_request(history), purpose="one_shot")
    assert reply.text == "please refactor the parser module into"


async def test_title_request_with_a_short_first_message() -> None:
    reply = await ask(title_request(rows(("user", "hello"))), model="alt")
    assert reply.text == "hello"


async def test_title_requests_ignore_effect_directives() -> None:
    history = rows(("user", "x [[error boom]] [[tokens 4]] [[finish length]]"))
    reply = await ask(title_request(history))
    assert reply.text == "x"
    assert reply.finish == "stop"


async def test_compress_summarises_user_turns() -> None:
    history = rows(
        ("user", "please refactor the parser module"),
        ("assistant", "You said: please refactor the parser module"),
        ("user", "[[tokens 3]] now add tests for it"),
        ("assistant", "t0 t1 t2"),
        ("user", "ok"),
    )
    reply = await ask(summary_request(history))
    assert reply.text == "Summary of 5 messages: please refactor the, now add tests, ok"
    assert reply.finish == "stop"
    assert reply.calls == []


async def test_compress_ignores_tool_directives() -> None:
    call = StoredToolCall("tc_2_0", "call_1", "read_file", '{"path": "a"}')
    history = [
        materialize("s", NewRow(role="user", content='look [[tool read_file {"path": "a"}]]'), 1),
        materialize("s", NewRow(role="assistant", content="", tool_calls=(call,)), 2),
        materialize(
            "s", NewRow(role="tool", content="x", provider_call_id="call_1", tool_name="read_file"), 3
        ),
        materialize("s", NewRow(role="assistant", content="Done: x"), 4),
    ]
    reply = await ask(summary_request(history), purpose="one_shot")
    assert reply.calls == []
    assert reply.text == "Summary of 4 messages: look"
