"""``acpx`` → ``pi-acp`` 0.0.34 → ``hermes-pi``: an ACP client drives Hermes through pi's adapter.

pi-acp spawns ``$PI_ACP_PI_COMMAND --mode rpc --no-themes`` (``hermes-pi`` here) and translates
ACP to pi's RPC; acpx is the ACP client (installed into ``.ci/acpx`` as for the ACP smoke tests).
pi-acp runs on Node 24 from ``.ci/clients/node24`` (see ``tests/pi/node.py``).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.acp.test_acpx_smoke import _find_or_install_acpx
from tests.pi import node
from tests.pi.client import pi_env
from tests.timing import scaled

pytestmark = node.skip_unless_wanted


@pytest.fixture(scope="module", autouse=True)
def _clients_installed() -> None:
    node.npm_modules()
    _find_or_install_acpx()


class Acpx:
    """acpx with pi-acp as its agent and hermes-pi behind it."""

    def __init__(self, home: Path, workspace: Path, tmp_path: Path) -> None:
        (tmp_path / "user-home").mkdir(exist_ok=True)
        self.workspace = workspace
        self.agent = f"node {node.npm_modules() / 'pi-acp' / 'dist' / 'index.js'}"
        self.env = node.node_env(
            {
                **pi_env(home),
                "PATH": node.node_env()["PATH"],
                "HOME": str(tmp_path / "user-home"),  # pi-acp keeps its session map there
                "PI_ACP_PI_COMMAND": node.hermes_pi(),
            }
        )

    def command(self, *args: str, ttl: str = "1") -> list[str]:
        return [_find_or_install_acpx(), "--agent", self.agent, "--format", "json", "--ttl", ttl, *args]

    def run(self, *args: str, ttl: str = "1") -> tuple[int, list[dict[str, Any]]]:
        done = subprocess.run(
            self.command(*args, ttl=ttl),
            cwd=self.workspace,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=scaled(90),
        )
        return done.returncode, frames(done.stdout)


def frames(text: str) -> list[dict[str, Any]]:
    """The JSON objects acpx printed, one per line (it prints a label line too)."""
    out = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def updates(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f["params"]["update"] for f in found if f.get("method") == "session/update"]


def result_of(found: list[dict[str, Any]], method: str) -> dict[str, Any]:
    request = next(f for f in found if f.get("method") == method)
    response = next(f for f in found if f.get("id") == request["id"] and "method" not in f)
    assert "result" in response, response
    result: dict[str, Any] = response["result"]
    return result


@pytest.fixture
def acpx(home: Path, workspace: Path, tmp_path: Path) -> Acpx:
    return Acpx(home, workspace, tmp_path)


def test_initialize_new_session_and_a_prompt(acpx: Acpx) -> None:
    code, found = acpx.run("exec", "hello from acp")
    assert code == 0
    assert result_of(found, "initialize")["agentInfo"]["name"] == "pi-acp"
    created = result_of(found, "session/new")
    assert len(created["sessionId"]) == len("20260101_120000_1a2b3c")  # a Hermes session id
    assert created["models"]["currentModelId"] == "mock/script"
    assert "mock/alt" in [m["modelId"] for m in created["models"]["availableModels"]]
    assert created["modes"]["currentModeId"] == "off"
    text = "".join(
        u["content"]["text"] for u in updates(found) if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert "You said: hello from acp" in text
    assert result_of(found, "session/prompt") == {"stopReason": "end_turn"}


def test_a_tool_with_its_approval(acpx: Acpx) -> None:
    code, found = acpx.run(
        "--approve-all", "exec", 'go [[tool terminal {"command": "hermes-guard-test; echo via-acp"}]]'
    )
    assert code == 0
    asked = next(f for f in found if f.get("method") == "session/request_permission")
    assert [o["name"] for o in asked["params"]["options"]] == [
        "Allow once",
        "Allow for this session",
        "Always allow",
        "Deny",
    ]
    assert "hermes-guard-test" in asked["params"]["toolCall"]["title"]
    done = [
        u
        for u in updates(found)
        if u.get("sessionUpdate") == "tool_call_update" and u.get("status") == "completed"
    ]
    assert done and "via-acp" in json.dumps(done[-1]["content"])
    assert result_of(found, "session/prompt") == {"stopReason": "end_turn"}


def test_cancel(acpx: Acpx, tmp_path: Path) -> None:
    assert acpx.run("sessions", "new", ttl="30")[0] == 0
    out = tmp_path / "prompt.out"
    try:
        with out.open("w") as sink:
            running = subprocess.Popen(
                acpx.command("prompt", "long [[tokens 5000]] [[delay 20]]", ttl="30"),
                cwd=acpx.workspace,
                env=acpx.env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                text=True,
            )
            deadline = time.monotonic() + scaled(60)
            while "agent_message_chunk" not in out.read_text():
                assert time.monotonic() < deadline and running.poll() is None, out.read_text()[-2000:]
                time.sleep(0.05)  # polling the file the prompt writes, not ordering anything
            code, found = acpx.run("cancel", ttl="30")
            assert code == 0 and found[-1]["cancelled"] is True
            assert running.wait(scaled(60)) in (0, 130)
        printed = frames(out.read_text())
        assert result_of(printed, "session/prompt") == {"stopReason": "cancelled"}
        assert any(f.get("method") == "session/cancel" for f in printed)
    finally:
        acpx.run("sessions", "close", ttl="30")
