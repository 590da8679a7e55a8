"""pi's own ``RpcClient`` (``@earendil-works/pi-coding-agent`` 1.6.0, on Node 24) drives ``hermes pi``.

Each test runs one scenario of ``js/rpc_client.mjs``: the client starts ``hermes-pi`` (through
``js/hermes-pi-shim.mjs``, since the client always runs ``node <cliPath>``), calls its typed
methods and reports what they returned and which events it received. ``tests/pi/node.py`` says how
Node 24 and the npm packages get into ``.ci/clients``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.pi import node
from tests.pi.client import pi_env
from tests.timing import scaled

pytestmark = node.skip_unless_wanted


@pytest.fixture(scope="module", autouse=True)
def _clients_installed() -> None:
    node.npm_modules()


def run(scenario: str, home: Path, workspace: Path) -> dict[str, Any]:
    """Run one scenario and return what the client reported."""
    env = node.node_env(
        {
            **pi_env(home),
            "PATH": node.node_env()["PATH"],
            "PI_MODULES": str(node.npm_modules()),
            "HERMES_PI_SHIM": str(node.JS / "hermes-pi-shim.mjs"),
            "HERMES_PI_BIN": node.hermes_pi(),
            "WORKDIR": str(workspace),
        }
    )
    done = subprocess.run(
        [node.node(), str(node.JS / "rpc_client.mjs"), scenario],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(workspace),
        timeout=scaled(150),
    )
    assert done.returncode == 0, f"scenario {scenario} failed:\n{done.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_prompt_and_wait(home: Path, workspace: Path) -> None:
    seen = run("prompt", home, workspace)
    assert seen["before"]["isStreaming"] is False and seen["before"]["messageCount"] == 0
    assert seen["before"]["model"]["provider"] == "mock" and seen["before"]["model"]["id"] == "script"
    assert seen["types"][0] == "agent_start" and seen["types"][-2:] == ["agent_end", "agent_settled"]
    assert seen["types"].count("agent_settled") == 1
    assert seen["streamed"] == seen["final"] == ["You said: hello world"]
    assert seen["lastText"] == "You said: hello world"
    roles = [m["role"] for m in seen["messages"]]
    assert roles == ["user", "assistant"]
    assert seen["after"]["messageCount"] == 2 and seen["after"]["sessionId"] == seen["before"]["sessionId"]
    assert seen["stats"]["userMessages"] == 1 and seen["stats"]["assistantMessages"] == 1
    assert Path(seen["after"]["sessionFile"]).is_file()
    assert seen["exitCode"] == 0


def test_streaming_deltas_rebuild_the_answer(home: Path, workspace: Path) -> None:
    seen = run("streaming", home, workspace)
    expected = " ".join(f"t{i}" for i in range(500))
    assert seen["streamed"] == seen["final"] == [expected]
    assert seen["deltas"] >= 2  # streamed in pieces, not sent whole at the end


def test_steer_reaches_the_model_at_the_tool_boundary(home: Path, workspace: Path) -> None:
    seen = run("steer", home, workspace)
    assert seen["disposition"] == "started" and seen["steered"] == "queued"
    assert seen["queues"][0]["steering"] == ["keep it short"]
    assert seen["queues"][-1] == {"type": "queue_update", "steering": [], "followUp": []}
    assert seen["final"][-1] == "Done: worked / Steer: keep it short"
    assert seen["settled"] == [{"type": "agent_settled", "aborted": False}]


def test_follow_up_runs_after_the_first_answer_in_the_same_run(home: Path, workspace: Path) -> None:
    seen = run("follow_up", home, workspace)
    assert seen["queued"] == "queued"
    assert seen["final"] == [" ".join(f"t{i}" for i in range(40)), "You said: second"]
    assert seen["types"].count("agent_start") == 1 and seen["types"].count("agent_settled") == 1
    assert seen["queues"][0]["followUp"] == ["second"] and seen["queues"][-1]["followUp"] == []
    users = [m["content"][0]["text"] for m in seen["messages"] if m["role"] == "user"]
    assert users == ["first [[tokens 40]] [[delay 50]]", "second"]


def test_abort_settles_aborted_and_the_session_goes_on(home: Path, workspace: Path) -> None:
    seen = run("abort", home, workspace)
    assert seen["settled"] == [{"type": "agent_settled", "aborted": True}]
    assert seen["stops"][-1] == "aborted"
    assert seen["state"]["isStreaming"] is False
    assert seen["again"] == ["You said: again"]


def test_approval_through_the_extension_ui_dialog(home: Path, workspace: Path) -> None:
    seen = run("approval", home, workspace)
    first = seen["requests"][0]
    assert first["method"] == "select" and first["timeout"] == 300_000
    assert first["options"][0] == "Allow once" and first["options"][-1] == "Deny"
    assert "hermes-guard-test" in first["title"]
    (allowed,) = seen["allowed"]
    assert allowed["isError"] is False and "approved-run" in allowed["result"]["content"][0]["text"]
    (denied,) = seen["denied"]
    assert denied["isError"] is True and "second-run" not in denied["result"]["content"][0]["text"]
    assert seen["final"][-1].startswith("Done: The user declined")


def test_model_switch_and_thinking_level(home: Path, workspace: Path) -> None:
    seen = run("models", home, workspace)
    ids = {(m["provider"], m["id"]) for m in seen["available"]}
    assert {("mock", "echo"), ("mock", "alt"), ("mock", "script")} <= ids
    assert seen["chosen"]["provider"] == "mock" and seen["chosen"]["id"] == "alt"
    assert seen["final"] == ["alt: You said: hi"]
    assert seen["state"]["model"]["id"] == "alt"
    assert seen["levels"][0] == "off" and "high" in seen["levels"]
    assert seen["thinking"] == "high"
    assert seen["cycled"]["model"]["id"] != "alt" and seen["cycled"]["isScoped"] is False
    assert seen["failure"] == "Model not found: mock/no-such-model"


def test_compact(home: Path, workspace: Path) -> None:
    seen = run("compact", home, workspace)
    compacted = seen["compacted"]
    assert compacted["summary"].startswith("Summary of 2 messages: first question about")
    types = [e["type"] for e in seen["events"]]
    assert types == ["compaction_start", "compaction_end"]
    assert seen["events"][1]["result"] == compacted
    roles = [m["role"] for m in seen["messages"]]
    assert roles == ["compactionSummary", "user", "assistant"]
    entries = seen["entries"]["entries"]
    assert entries[-1]["type"] == "compaction" and seen["entries"]["leafId"] == entries[-1]["id"]
    kept = next(e for e in entries if e["id"] == compacted["firstKeptEntryId"])
    assert kept["message"]["content"][0]["text"] == "second question about pears"


def test_get_messages_after_a_restart_with_session(home: Path, workspace: Path) -> None:
    seen = run("restart", home, workspace)
    assert seen["second"]["sessionId"] == seen["first"]["sessionId"]
    assert seen["second"]["sessionFile"] == seen["first"]["sessionFile"]
    assert [m["role"] for m in seen["messages"]] == ["user", "assistant"]
    assert seen["messages"][0]["content"][0]["text"] == "remember the word zebra"
    assert seen["again"] == ["You said: and now?"]
