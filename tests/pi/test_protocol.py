"""``hermes pi`` over real stdio: responses, bad input, queues, sessions and entries
(docs/reference/pi.md). The pi clients' own tests are in ``test_rpc_client.py`` and ``test_pi_acp.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.pi.client import PiProcess, write_config

GUARDED = 'x [[tool terminal {"command": "hermes-guard-test; echo ran"}]]'


def test_bad_lines_get_pi_errors_and_the_process_keeps_serving(pi: PiProcess) -> None:
    start = pi.mark()
    pi.send_raw(b"not json\n")
    pi.send_raw(b"[1, 2]\n")
    pi.send_raw(b'{"id": "u", "type": "no_such_command"}\n')
    pi.send_raw(b'{"id": "t"}\n')
    parse = pi.wait_type("response", 2, start)
    assert all(r["command"] == "parse" and r["success"] is False and "id" not in r for r in parse[:2])
    assert parse[0]["error"].startswith("Failed to parse command: ")
    assert pi.response("u") == {
        "id": "u",
        "type": "response",
        "command": "no_such_command",
        "success": False,
        "error": "Unknown command: no_such_command",
    }
    assert pi.response("t")["error"] == "Unknown command: None"
    assert pi.fail("prompt") == "prompt: message must be a string"
    assert pi.fail("prompt", message=3) == "prompt: message must be a string"
    assert pi.fail("prompt", message="  ") == "prompt: message must not be empty"
    assert pi.fail("prompt", message="x", images="nope") == "prompt: images must be a list of image objects"
    assert pi.fail("set_model", provider="mock") == "set_model: modelId must be a string"
    assert pi.fail("set_auto_retry", enabled="yes") == "set_auto_retry: enabled must be true or false"
    assert pi.fail("set_thinking_level", level="extreme").startswith(
        "set_thinking_level: level must be one of"
    )
    assert pi.fail("get_entries", since="no-such-entry") == "Entry not found: no-such-entry"
    assert pi.fail("set_session_name", name="   ") == "Session name cannot be empty"
    assert "not supported" in pi.fail("set_steering_mode", mode="one-at-a-time")
    # Still serving.
    assert pi.call("get_state")["isStreaming"] is False
    assert pi.prompt_and_wait("still here")[-1] == {"type": "agent_settled", "aborted": False}


def test_a_prompt_while_a_run_is_active_needs_a_streaming_behavior(pi: PiProcess) -> None:
    start = pi.mark()
    pi.call("prompt", message="long [[tokens 2000]] [[delay 10]]")
    pi.wait_type("message_update", 1, start)
    assert pi.call("get_state")["isStreaming"] is True
    assert pi.fail("prompt", message="second").startswith("Agent is already processing.")
    assert pi.call("prompt", message="later", streamingBehavior="followUp") == {"disposition": "queued"}
    assert pi.call("get_state")["pendingMessageCount"] == 1
    assert pi.call("clear_queue") == {"steering": [], "followUp": ["later"]}
    pi.call("abort")
    settled = pi.of_type("agent_settled", start)
    assert settled == [{"type": "agent_settled", "aborted": True}]
    assert pi.of_type("queue_update", start)[-1] == {"type": "queue_update", "steering": [], "followUp": []}


def test_follow_up_while_idle_runs_after_the_next_prompt(pi: PiProcess) -> None:
    assert pi.call("follow_up", message="afterwards") == {"disposition": "queued"}
    assert pi.call("get_state")["pendingMessageCount"] == 1
    records = pi.prompt_and_wait("first")
    finals = [
        r["message"]["content"][0]["text"]
        for r in records
        if r["type"] == "message_end" and r["message"]["role"] == "assistant"
    ]
    assert finals == ["You said: first", "You said: afterwards"]
    assert [r["type"] for r in records].count("agent_settled") == 1


def test_a_tool_round_is_two_pi_turns_with_the_tool_events_between(pi: PiProcess) -> None:
    records = pi.prompt_and_wait('look [[tool list_dir {"path": "."}]]')
    types = [r["type"] for r in records if r["type"] != "message_update"]
    start = types.index("agent_start")
    assert types[start:] == [
        "agent_start",
        "turn_start",
        "message_start",  # user
        "message_end",
        "message_start",  # assistant asking for the tool
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",  # toolResult
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",  # the answer
        "message_end",
        "turn_end",
        "agent_end",
        "agent_settled",
    ]
    asking = [r for r in records if r["type"] == "message_end"][1]["message"]
    assert asking["stopReason"] == "toolUse"
    (call,) = asking["content"]
    assert call["type"] == "toolCall" and call["name"] == "list_dir" and call["arguments"] == {"path": "."}
    updates = [r["assistantMessageEvent"]["type"] for r in records if r["type"] == "message_update"]
    assert updates[:3] == ["toolcall_start", "toolcall_delta", "toolcall_end"]
    end = next(r for r in records if r["type"] == "tool_execution_end")
    assert end["toolCallId"] == call["id"] and end["isError"] is False and "durationMs" in end
    turn_end = next(r for r in records if r["type"] == "turn_end")
    assert turn_end["message"] == asking and turn_end["toolResults"][0]["toolCallId"] == call["id"]


def test_a_failed_model_call_settles_with_an_error_message(pi: PiProcess) -> None:
    records = pi.prompt_and_wait("x [[error quota gone]]")
    ends = [
        r["message"] for r in records if r["type"] == "message_end" and r["message"]["role"] == "assistant"
    ]
    assert ends[-1]["stopReason"] == "error" and "quota gone" in ends[-1]["errorMessage"]
    assert records[-1] == {"type": "agent_settled", "aborted": False}


def test_a_dialog_answer_for_an_unknown_or_closed_question_is_ignored(pi: PiProcess) -> None:
    start = pi.mark()
    pi.send({"type": "extension_ui_response", "id": "nobody-asked", "value": "x"})
    pi.call("prompt", message=GUARDED)
    (request,) = pi.wait_type("extension_ui_request", 1, start)
    pi.send({"type": "extension_ui_response", "id": request["id"], "cancelled": True})
    pi.wait_type("agent_settled", 1, start)
    pi.send({"type": "extension_ui_response", "id": request["id"], "value": "Allow once"})  # too late
    end = pi.of_type("tool_execution_end", start)[0]
    assert end["isError"] is True and "ran" not in end["result"]["content"][0]["text"]
    assert [r for r in pi.records[start:] if r.get("type") == "response" and "id" not in r] == []
    assert pi.call("get_state")["isStreaming"] is False


def test_slash_commands_run_through_prompt(pi: PiProcess) -> None:
    names = {c["name"] for c in pi.call("get_commands")["commands"]}
    assert {"help", "status", "undo"} <= names
    start = pi.mark()
    assert pi.call("prompt", message="/status") == {"disposition": "handled"}
    (note,) = pi.wait_type("extension_ui_request", 1, start)
    assert note["method"] == "notify" and "mock:script" in note["message"]
    assert pi.of_type("agent_start", start) == []
    pi.prompt_and_wait("one")
    assert pi.call("prompt", message="/undo") == {"disposition": "handled"}
    assert pi.call("get_messages")["messages"] == []


def test_session_name_and_stats(pi: PiProcess) -> None:
    start = pi.mark()
    pi.call("set_session_name", name="my work")
    assert pi.wait_type("session_info_changed", 1, start)[0]["name"] == "my work"
    pi.prompt_and_wait('go [[tool list_dir {"path": "."}]]')
    state = pi.call("get_state")
    assert state["sessionName"] == "my work" and state["messageCount"] == 4
    stats = pi.call("get_session_stats")
    assert stats["sessionId"] == state["sessionId"] and stats["sessionFile"] == state["sessionFile"]
    assert (stats["userMessages"], stats["assistantMessages"], stats["toolCalls"], stats["toolResults"]) == (
        1,
        2,
        1,
        1,
    )
    assert stats["totalMessages"] == 4 and stats["tokens"]["total"] > 0
    assert stats["contextUsage"]["contextWindow"] == 32768


def test_entries_cursor_and_tree(pi: PiProcess) -> None:
    pi.prompt_and_wait("first")
    first = pi.call("get_entries")
    ids = [e["id"] for e in first["entries"]]
    assert len(ids) == 2 and first["leafId"] == ids[-1]
    assert first["entries"][0]["parentId"] is None and first["entries"][1]["parentId"] == ids[0]
    pi.prompt_and_wait("second")
    after = pi.call("get_entries", since=first["leafId"])
    assert [e["message"]["role"] for e in after["entries"]] == ["user", "assistant"]
    assert after["entries"][0]["parentId"] == first["leafId"]
    tree = pi.call("get_tree")
    assert tree["leafId"] == after["leafId"]
    node = tree["tree"][0]
    depth = 1
    while node["children"]:
        node = node["children"][0]
        depth += 1
    assert depth == 4 and node["entry"]["id"] == tree["leafId"]


def test_a_deep_tree_is_answered(spawn: Callable[..., PiProcess], home: Path) -> None:
    """A long session is a deep tree: it is encoded without recursion (Python's limit is 1,000)."""
    write_config(home, 'model = "mock:script"\n[agent]\nmax_tool_rounds = 800\n')
    pi = spawn()
    pi.prompt_and_wait('deep [[tool list_dir {"path": "."}]] [[rounds 700]]', timeout=240)
    tree = pi.call("get_tree", timeout=60)
    depth, node = 1, tree["tree"][0]
    while node["children"]:
        node = node["children"][0]
        depth += 1
    assert depth > 1000 and node["entry"]["id"] == tree["leafId"]


def test_fork_clone_new_and_switch(pi: PiProcess) -> None:
    pi.prompt_and_wait("alpha")
    pi.prompt_and_wait("beta")
    original = pi.call("get_state")
    forks = pi.call("get_fork_messages")["messages"]
    assert [m["text"] for m in forks] == ["alpha", "beta"]
    assert pi.call("fork", entryId=forks[1]["entryId"]) == {"text": "beta", "cancelled": False}
    forked = pi.call("get_state")
    assert forked["sessionId"] != original["sessionId"]
    users = [m["content"][0]["text"] for m in pi.call("get_messages")["messages"] if m["role"] == "user"]
    assert users == ["alpha"]
    assert pi.call("clone") == {"cancelled": False}
    cloned = pi.call("get_state")
    assert cloned["sessionId"] not in (forked["sessionId"], original["sessionId"])
    assert pi.call("new_session", parentSession=original["sessionFile"]) == {"cancelled": False}
    assert pi.call("get_state")["messageCount"] == 0
    assert pi.call("switch_session", sessionPath=original["sessionFile"]) == {"cancelled": False}
    back = pi.call("get_state")
    assert back["sessionId"] == original["sessionId"] and back["messageCount"] == 4
    assert pi.call("switch_session", sessionPath=cloned["sessionId"]) == {"cancelled": False}
    assert pi.call("get_state")["sessionId"] == cloned["sessionId"]
    assert (
        pi.fail("switch_session", sessionPath="no-such-session")
        == "No session found matching 'no-such-session'"
    )
    assert pi.fail("fork", entryId="999999").startswith("Entry 999999 is not a user message")


def test_bash_streams_and_reaches_the_next_prompt(pi: PiProcess) -> None:
    start = pi.mark()
    result = pi.call("bash", command="echo one; echo two >&2; exit 3")
    assert result == {"output": "one\ntwo\n", "exitCode": 3, "cancelled": False, "truncated": False}
    deltas = "".join(r["delta"] for r in pi.of_type("bash_execution_update", start))
    assert deltas == "one\ntwo\n" and all(r["id"] == "c1" for r in pi.of_type("bash_execution_update", start))
    pending = pi.call("get_messages")["messages"]
    assert pending[-1]["role"] == "bashExecution" and pending[-1]["exitCode"] == 3
    pi.call("bash", command="echo hidden", excludeFromContext=True)
    records = pi.prompt_and_wait("and?")
    user = next(
        r["message"] for r in records if r["type"] == "message_start" and r["message"]["role"] == "user"
    )
    text = user["content"][0]["text"]
    assert text.startswith("Ran `echo one; echo two >&2; exit 3`\n```\none\ntwo\n```") and text.endswith(
        "and?"
    )
    assert "hidden" not in text


def test_bash_abort_and_truncation(pi: PiProcess) -> None:
    running = pi.start("bash", command="echo started; sleep 30")
    pi.wait_type("bash_execution_update", 1)
    pi.call("abort_bash")
    result = pi.response(running)["data"]
    assert result["cancelled"] is True and result["exitCode"] is None
    big = pi.call("bash", command="seq 1 5000")
    assert big["truncated"] is True and big["output"].splitlines()[-1] == "5000"
    assert len(big["output"].splitlines()) == 2000
    assert Path(big["fullOutputPath"]).read_text().splitlines()[0] == "1"


def test_export_html(pi: PiProcess, workspace: Path) -> None:
    pi.prompt_and_wait("<b>escaped</b>")
    path = Path(pi.call("export_html")["path"])
    assert path.parent == workspace and path.name.startswith("hermes-session-")
    page = path.read_text()
    assert "&lt;b&gt;escaped&lt;/b&gt;" in page and "<script" not in page
    assert pi.call("export_html", outputPath="x.html") == {"path": str(workspace / "x.html")}
    assert pi.fail("export_html", outputPath="no-such-dir/x.html").startswith("Cannot write ")


def test_automatic_compaction_is_reported(spawn: Callable[..., PiProcess], home: Path) -> None:
    write_config(home, 'model = "mock:script"\n[compression]\nauto_threshold = 0.01\n')
    pi = spawn()
    pi.prompt_and_wait("first [[tokens 400]]")
    records = pi.prompt_and_wait("second")
    types = [r["type"] for r in records]
    kinds = [t for t in types if "compaction" in t or t == "entry_appended"]
    assert kinds == [
        "compaction_start",
        "auto_compaction_start",
        "compaction_end",
        "auto_compaction_end",
        "entry_appended",
    ]
    start = next(r for r in records if r["type"] == "compaction_start")
    end = next(r for r in records if r["type"] == "compaction_end")
    assert start["reason"] == end["reason"] == "threshold"
    assert end["result"]["summary"].startswith("Summary of")
    entry = next(r for r in records if r["type"] == "entry_appended")["entry"]
    assert entry["type"] == "compaction" and entry["firstKeptEntryId"] == end["result"]["firstKeptEntryId"]
    assert types.index("auto_compaction_end") < types.index("agent_settled")
    assert entry["id"] in {e["id"] for e in pi.call("get_entries")["entries"]}
    roles = [m["role"] for m in pi.call("get_messages")["messages"]]
    assert roles == ["compactionSummary", "user", "assistant"]
