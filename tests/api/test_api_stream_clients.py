"""Real clients read our chat streams: the canonical SDK loop in openai-python (latest 2.x and 3.x)
and openai-node, LibreChat's OpenAI model from ``@librechat/agents``, and the typed client written
for this API, ``hermes-agent-api-client`` (docs/reference/api-server.md#chat-stream).

Each client is installed on first use into a place of its own (see ``client_installs.py``; the
typed client needs Python 3.13). A client that cannot be installed fails its test with the
installer's words; ``HERMES_TEST_SKIP_CLIENTS=1`` skips them all on purpose.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.api import client_installs as ci
from tests.api.api_helpers import Server
from tests.timing import scaled

SCRIPTS = Path(__file__).with_name("clients")
TOOL_TURN = 'go [[tool terminal {"command":"echo hi"}]]'
FAILING_TURN = "x [[error quota exhausted]]"

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("HERMES_TEST_SKIP_CLIENTS") == "1", reason="HERMES_TEST_SKIP_CLIENTS=1 was set"
    ),
    pytest.mark.timeout(600),  # a first run installs the client (@librechat/agents: ~2 minutes)
]

PYTHON_SDKS = {"openai-python-2": ["openai>=2,<3"], "openai-python-3": ["openai>=3,<4"]}
NODE_CLIENTS = {
    "openai-node": (["openai@latest"], "sdk_loop.mjs"),
    "librechat-agents": (["@librechat/agents@latest"], "librechat_loop.cjs"),
}


def _installed(install: Any, *args: Any, **kwargs: Any) -> Path:
    try:
        path: Path = install(*args, **kwargs)
    except ci.ClientUnavailable as exc:
        pytest.fail(f"cannot install the client: {exc}")
    return path


def _run(args: list[str], cwd: Path | None = None) -> dict[str, Any]:
    done = subprocess.run(args, capture_output=True, text=True, timeout=scaled(120), cwd=cwd)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, (
        f"the client crashed (exit {done.returncode}):\n{done.stderr[-3000:]}"
    )
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _client(name: str, server: Server, prompt: str) -> dict[str, Any]:
    base = f"{server.base}/v1"
    if name in PYTHON_SDKS:
        python = _installed(ci.python_client, name, PYTHON_SDKS[name])
        return _run([str(python), str(SCRIPTS / "sdk_loop.py"), base, server.key, prompt])
    packages, script = NODE_CLIENTS[name]
    place = _installed(ci.npm_client, name, packages)
    # Node resolves packages from the script's folder: run a copy placed beside node_modules.
    shutil.copyfile(SCRIPTS / script, place / script)
    node = shutil.which("node")
    assert node, "node is needed to run the Node clients"
    return _run([node, str(place / script), base, server.key, prompt], cwd=place)


CLIENTS = [*PYTHON_SDKS, *NODE_CLIENTS]


@pytest.mark.parametrize("name", CLIENTS)
def test_the_canonical_stream_loop_survives_a_tool(server: Server, name: str) -> None:
    # text += chunk.choices[0].delta.content or "" over a turn that runs a tool: before the
    # progress frames carried one empty-delta choice, this raised IndexError (Python) or
    # TypeError (Node) on the first of them.
    result = _client(name, server, TOOL_TURN)
    assert result["error"] is None, result
    assert result["text"] == "Done: hi", result


@pytest.mark.parametrize("name", CLIENTS)
def test_a_failed_stream_raises_the_sdks_error_with_the_message(server: Server, name: str) -> None:
    result = _client(name, server, FAILING_TURN)
    assert result["error"] is not None and "quota exhausted" in result["error"]["message"], result
    if name != "librechat-agents":
        assert result["error"]["type"] == "APIError", result


def _typed(server: Server, prompt: str) -> dict[str, Any]:
    try:
        python = ci.find_python("3.13")
    except ci.ClientUnavailable as exc:
        pytest.fail(f"the typed client (hermes-agent-api-client) requires Python 3.13: {exc}")
    exe = _installed(
        ci.python_client, "hermes-agent-api-client", ["hermes-agent-api-client==0.3.3"], python=python
    )
    return _run([str(exe), str(SCRIPTS / "typed_client.py"), server.base, server.key, prompt])


def test_the_typed_client_sees_tool_progress_text_and_success(server: Server) -> None:
    result = _typed(server, TOOL_TURN)
    assert result["error"] is None and result["streaming"] is True, result
    events = result["events"]
    progress = [(e["tool_name"], e["status"]) for e in events if e["kind"] == "ToolProgressEvent"]
    assert progress == [("terminal", "running"), ("terminal", "completed")]
    assert "".join(e["text"] for e in events if e["kind"] == "AssistantDeltaEvent") == "Done: hi"
    assert events[-1] == {
        "kind": "TerminalEvent",
        "outcome": "success",
        "partial": False,
        "failure_reason": None,
    }


def test_the_typed_client_ends_a_failed_stream_on_its_terminal_event(server: Server) -> None:
    # The error line frontends store is invisible to an SSE parser: the strict typed client still
    # ends on the final chunk's outcome instead of a protocol failure.
    result = _typed(server, FAILING_TURN)
    assert result["error"] is None, result
    assert result["events"][-1]["kind"] == "TerminalEvent"
    assert result["events"][-1]["outcome"] == "upstream_error"
