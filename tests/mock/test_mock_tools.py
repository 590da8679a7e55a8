"""Tool directives: batches, rounds, the ``Done:`` reply, steer guidance, secret and sudo calls."""

from __future__ import annotations

import json

from mock_helpers import Collect, Reply, assistant, tool, user

from hermes_core import ChatMessage


def after_round(history: list[ChatMessage], reply: Reply, results: list[str]) -> list[ChatMessage]:
    """Return the history extended the way the core extends it after running one batch."""
    extended = [*history, assistant(reply.text, reply.calls)]
    extended.extend(tool(call.id, text, call.name) for call, text in zip(reply.calls, results, strict=True))
    return extended


async def test_tool_directive_calls_the_tool_with_its_json(collect: Collect) -> None:
    reply = await collect('please [[tool read_file {"path": "notes.md"}]] now')
    assert [(c.name, json.loads(c.arguments)) for c in reply.calls] == [("read_file", {"path": "notes.md"})]
    assert reply.deltas == []
    assert reply.finish == "tool_calls"
    assert reply.usage.output == 0


async def test_json_may_contain_closing_brackets_inside_strings(collect: Collect) -> None:
    typed = '[[tool terminal {"command": "echo ]] [[x]] }", "n": [1, [2]]}]] tail'
    reply = await collect(typed)
    assert len(reply.calls) == 1
    assert reply.calls[0].name == "terminal"
    assert json.loads(reply.calls[0].arguments) == {"command": "echo ]] [[x]] }", "n": [1, [2]]}


async def test_several_tool_directives_form_one_batch_in_order(collect: Collect) -> None:
    typed = (
        '[[tool read_file {"path": "a"}]] then [[tool list_dir {"path": "."}]] '
        '[[tool search {"pattern": "x"}]]'
    )
    reply = await collect(typed)
    assert [c.name for c in reply.calls] == ["read_file", "list_dir", "search"]
    ids = [c.id for c in reply.calls]
    assert len(set(ids)) == 3
    assert all(i.startswith("mock_") for i in ids)


async def test_done_reply_joins_first_lines_of_the_last_round(collect: Collect) -> None:
    history = [user('[[tool read_file {"path": "a"}]] [[tool list_dir {"path": "."}]]')]
    first = await collect(history)
    history = after_round(history, first, ["alpha line\nsecond line", "dir1\r\ndir2"])
    done = await collect(history)
    assert done.calls == []
    assert done.text == "Done: alpha line; dir1"
    assert done.finish == "stop"


async def test_rounds_repeat_the_batch_then_answer_with_the_last_round(collect: Collect) -> None:
    history = [user('go [[rounds 3]] [[tool terminal {"command": "date"}]]')]
    seen_ids: set[str] = set()
    for number in range(1, 4):
        reply = await collect(history)
        assert [c.name for c in reply.calls] == ["terminal"], f"round {number}"
        assert reply.finish == "tool_calls"
        seen_ids.update(c.id for c in reply.calls)
        history = after_round(history, reply, [f"result of round {number}\nmore"])
    final = await collect(history)
    assert final.calls == []
    assert final.text == "Done: result of round 3"
    assert len(seen_ids) == 3  # provider ids never repeat within the turn


async def test_rounds_count_only_since_the_latest_user_message(collect: Collect) -> None:
    old_call_history = [user('[[tool terminal {"command": "a"}]]')]
    first = await collect(old_call_history)
    history = after_round(old_call_history, first, ["a-out"])
    history += [assistant("Done: a-out"), user('again [[tool terminal {"command": "b"}]]')]
    second = await collect(history)
    assert [json.loads(c.arguments) for c in second.calls] == [{"command": "b"}]
    assert not {c.id for c in second.calls} & {c.id for c in first.calls}
    history = after_round(history, second, ["b-out"])
    assert (await collect(history)).text == "Done: b-out"


async def test_steer_guidance_is_stripped_from_the_result_and_appended(collect: Collect) -> None:
    history = [user('[[tool terminal {"command": "ls"}]] [[tool terminal {"command": "pwd"}]]')]
    first = await collect(history)
    guidance = "check the tests too\n\nand be brief"
    history = after_round(history, first, ["file.txt\nother", "/home/me\n\n[User guidance] " + guidance])
    reply = await collect(history)
    assert reply.text == "Done: file.txt; /home/me / Steer: " + guidance


async def test_steer_on_a_single_line_result(collect: Collect) -> None:
    history = [user('[[tool terminal {"command": "true"}]]')]
    first = await collect(history)
    history = after_round(history, first, ["ok\n\n[User guidance] stop now"])
    assert (await collect(history)).text == "Done: ok / Steer: stop now"


async def test_no_steer_suffix_without_guidance(collect: Collect) -> None:
    history = [user('[[tool terminal {"command": "true"}]]')]
    first = await collect(history)
    history = after_round(history, first, ["[User guidance] is just text here"])
    assert (await collect(history)).text == "Done: [User guidance] is just text here"


async def test_secret_calls_request_secret(collect: Collect) -> None:
    reply = await collect("I need a key [[secret OPENAI_API_KEY]]")
    assert len(reply.calls) == 1
    call = reply.calls[0]
    assert call.name == "request_secret"
    assert json.loads(call.arguments) == {"env_var": "OPENAI_API_KEY", "prompt": "Enter OPENAI_API_KEY"}


async def test_sudo_calls_terminal_with_sudo(collect: Collect) -> None:
    reply = await collect("[[sudo apt-get install -y jq]] please")
    assert [(c.name, json.loads(c.arguments)) for c in reply.calls] == [
        ("terminal", {"command": "sudo apt-get install -y jq"})
    ]


async def test_tool_secret_and_sudo_share_one_batch_in_typed_order(collect: Collect) -> None:
    reply = await collect('[[sudo whoami]] [[tool clarify {"question": "ok?"}]] [[secret TOKEN]]')
    assert [c.name for c in reply.calls] == ["terminal", "clarify", "request_secret"]
    history = after_round([user("x")], reply, ["root", "yes", "stored"])
    # The batch came from the first message; a reply to the results is Done for any batch.
    assert (await collect(history)).text == "Done: root; yes; stored"


async def test_reasoning_precedes_tool_calls(collect: Collect) -> None:
    reply = await collect('[[reason need to look]] [[tool read_file {"path": "a"}]]')
    kinds = [type(c).__name__ for c in reply.chunks]
    assert kinds == [
        "ReasoningChunk",
        "ReasoningChunk",
        "ReasoningChunk",
        "ToolCallChunk",
        "UsageChunk",
        "FinishChunk",
    ]
    assert "".join(reply.reasoning) == "need to look"
