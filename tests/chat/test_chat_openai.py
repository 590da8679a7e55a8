"""``hermes chat`` in a real terminal on the ``openai`` provider, against a fake model API.

The same screens as on the mock model, but every model call goes over HTTP to a loopback
server that checks the exact request: the streamed reply, a tool call approved with one key
(its result goes back to the model), and ``/model`` completed and switched (the next request
names the new model).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.chat.test_chat_terminal import Open, open_chat, ready  # noqa: F401  (the fixture)
from tests.providers.upstream_fakes import OPENAI_DONE, Received
from tests.providers.vendors import delta, openai_reply, usage
from tests.tui.client import write_config
from tests.tui.test_model_family import upstream_on_a_thread

KEY = "sk-chat-test-0123456789abcdef"
COMMAND = "echo via-openai hermes-guard-test"


def posts(requests: list[Received]) -> list[Received]:
    """The model calls (the model-list probes left out)."""
    return [r for r in requests if r.method == "POST"]


def test_a_turn_a_tool_and_model_switch_through_the_openai_provider(open_chat: Open, home: Path) -> None:  # noqa: F811
    with upstream_on_a_thread() as upstream:
        tool_call = {
            "index": 0,
            "id": "call_chat_1",
            "type": "function",
            "function": {"name": "terminal", "arguments": json.dumps({"command": COMMAND})},
        }
        models = {
            "object": "list",
            "data": [{"id": m, "object": "model"} for m in ("gpt-4o", "gpt-4.1-mini")],
        }
        upstream.json("GET", "/v1/models", models)  # the endpoint's own list feeds /model completion
        upstream.replies(
            "/v1/chat/completions",
            [
                [
                    delta(role="assistant", content="**Streamed** through "),
                    delta(content="`openai`:\n\n- first item\n- second item\n"),
                    delta(finish_reason="stop"),
                    usage(21, 9),
                    OPENAI_DONE,
                ],
                [
                    delta(role="assistant", tool_calls=[tool_call]),
                    delta(finish_reason="tool_calls"),
                    OPENAI_DONE,
                ],
                openai_reply("The command printed its words."),
                openai_reply("Now on the mini model."),
            ],
        )
        write_config(
            home,
            'model = "openai:gpt-4o"\n[agent]\nprovider_retries = 0\n[titles]\nrefine = false\n'
            f'[providers.openai]\napi_key = "{KEY}"\nbase_url = "{upstream.url}/v1"\n',
        )
        term = open_chat()
        term.wait_screen("openai:gpt-4o", timeout=60)

        term.type("say hello")
        term.keys("Enter")
        shown = term.wait_for("second item")
        assert "Streamed through openai:" in shown and "• first item" in shown  # rendered Markdown
        first = posts(upstream.requests)[0]
        assert first.path == "/v1/chat/completions"
        assert first.headers["Authorization"] == f"Bearer {KEY}"
        assert first.body["model"] == "gpt-4o" and first.body["stream"] is True
        assert first.body["messages"][0]["role"] == "system"
        assert first.body["messages"][1:] == [{"role": "user", "content": "say hello"}]
        term.wait_screen("30 tokens")  # the usage the stream reported, in the toolbar

        term.type("run it")
        term.keys("Enter")
        term.wait_screen("[o] once")
        term.keys("o")
        shown = term.wait_for("The command printed its words.")
        assert "approved (once)" in shown and "via-openai hermes-guard-test" in shown
        third = posts(upstream.requests)[2].body["messages"]
        assert third[-2]["tool_calls"][0]["id"] == "call_chat_1"
        assert third[-1]["role"] == "tool" and third[-1]["tool_call_id"] == "call_chat_1"
        assert "via-openai hermes-guard-test" in third[-1]["content"]

        term.type("/model openai:gpt-4.1-mi")
        term.keys("Tab")
        term.wait_screen("❯ /model openai:gpt-4.1-mini")
        term.keys("Enter")
        term.wait_for("Model switched to openai:gpt-4.1-mini")
        term.type("and now?")
        term.keys("Enter")
        term.wait_for("Now on the mini model.")
        last = posts(upstream.requests)[3].body
        assert last["model"] == "gpt-4.1-mini"
        assert last["messages"][-1] == {"role": "user", "content": "and now?"}
        assert len(posts(upstream.requests)) == 4
        term.keys("C-d")
        assert term.exit_code() == 0
    assert KEY not in term.scrollback()
