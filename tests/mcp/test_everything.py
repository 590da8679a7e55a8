"""The npm reference server ``@modelcontextprotocol/server-everything``, end to end through acpx.

acpx passes the server in ``mcpServers`` of ``session/new`` (its ``--mcp-config`` file); the mock
model calls the server's tools; the results reach the editor. The server is found in
``.ci/mcp-everything`` of this checkout, installed there by the first test when missing (one
``npm install`` from the npm registry, like acpx itself; see tests/acp/test_acpx_smoke.py).
``HERMES_TEST_SKIP_ACPX=1`` skips these tests too.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.acp import wire
from tests.acp.conftest import Home
from tests.acp.test_acpx_smoke import _check, _run, pytestmark  # noqa: F401  (same skip rule)

VERSION = "2026.8.31"
LOCAL = Path(__file__).resolve().parents[2] / ".ci" / "mcp-everything"
BIN = LOCAL / "node_modules" / ".bin" / "mcp-server-everything"


@functools.cache
def everything() -> str:
    if BIN.exists():
        return str(BIN)
    npm = shutil.which("npm")
    assert npm and shutil.which("node"), (
        f"these tests need node and npm (to install @modelcontextprotocol/server-everything@{VERSION} into "
        ".ci/mcp-everything); install them or set HERMES_TEST_SKIP_ACPX=1 to skip these tests"
    )
    done = subprocess.run(
        [
            npm,
            "install",
            "--silent",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(LOCAL),
            f"@modelcontextprotocol/server-everything@{VERSION}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0 and BIN.exists(), (
        f"npm install of the reference server failed:\n{done.stderr}"
    )
    return str(BIN)


def mcp_config(tmp_path: Path) -> str:
    path = tmp_path / "mcp.json"
    server = {"name": "everything", "command": everything(), "args": ["stdio"], "env": []}
    path.write_text(json.dumps({"mcpServers": [server]}))
    return str(path)


def agent_text(directed: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(
        u["content"].get("text", "")
        for u in wire.updates(directed)
        if u.get("sessionUpdate") == "agent_message_chunk"
    )


def test_acpx_passes_the_reference_server_and_its_tool_answers(home: Home, tmp_path: Path) -> None:
    prompt = '[[tool mcp_everything_get_sum {"a": 19, "b": 23}]]'
    code, frames = _run(home, tmp_path, "--approve-all", "--mcp-config", mcp_config(tmp_path), "exec", prompt)
    assert code == 0
    directed = _check(frames)
    (new,) = [m for d, m in directed if d == "out" and m.get("method") == "session/new"]
    assert [s["name"] for s in new["params"]["mcpServers"]] == ["everything"]
    calls = [u for u in wire.updates(directed) if u.get("sessionUpdate") == "tool_call"]
    assert [c["kind"] for c in calls] == ["read"]  # readOnlyHint → read, no permission asked
    assert not [m for d, m in directed if m.get("method") == "session/request_permission"]
    assert "42" in agent_text(directed)


def test_reference_server_image_and_structured_results(home: Home, tmp_path: Path) -> None:
    prompt = (
        "[[tool mcp_everything_get_tiny_image {}]] "
        '[[tool mcp_everything_get_structured_content {"location": "New York"}]]'
    )
    code, frames = _run(home, tmp_path, "--approve-all", "--mcp-config", mcp_config(tmp_path), "exec", prompt)
    assert code == 0
    directed = _check(frames)
    done = [u for u in wire.updates(directed) if u.get("status") == "completed"]
    text = json.dumps(done)
    images = [
        c["content"] for u in done for c in u.get("content") or [] if c["content"].get("type") == "image"
    ]
    assert (
        images and images[0]["mimeType"] == "image/png" and images[0]["data"]
    )  # the image reached the editor
    assert "temperature" in text  # the structured weather report reached the editor
