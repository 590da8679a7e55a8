"""Without the ``mcp`` SDK: configured servers give one clear message and everything else works.

The SDK is installed in the test environment, so these runs hide it: a ``sitecustomize`` on
``PYTHONPATH`` marks ``mcp`` as not importable (``sys.modules["mcp"] = None``) before Hermes starts.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.acp.conftest import Home
from tests.mcp.test_surfaces import server_toml
from tests.tui.client import HERMES, hermes_env, write_config

MESSAGE = "the mcp library is not installed: pip install 'hermes-kernel[mcp]'"


def hidden_sdk_env(home: Path, tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "hide-mcp"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text('import sys\nsys.modules["mcp"] = None\n')
    env = hermes_env(home)
    env["PYTHONPATH"] = str(site)
    return env


def test_configured_servers_without_the_sdk(tmp_path: Path) -> None:
    write_config(tmp_path, 'model = "mock:echo"\n' + server_toml())
    env = hidden_sdk_env(tmp_path, tmp_path)

    def run(prompt: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [HERMES, "run", prompt],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    hello = run("hello")
    assert hello.returncode == 0 and hello.stdout == "You said: hello\n", hello.stderr
    assert hello.stderr.count(MESSAGE) == 1 and "tiny" in hello.stderr
    reload = run("/reload-mcp")
    assert reload.returncode == 0
    assert reload.stdout.splitlines() == [
        "Reloaded 1 MCP server:",
        f"  tiny (stdio): unavailable, 0 tools ({MESSAGE})",
    ]


async def test_acp_advertises_no_http_mcp_without_the_sdk(spawn: Any, home: Home, tmp_path: Path) -> None:
    env = home.env(PYTHONPATH=str(tmp_path / "hide-mcp"))
    hidden_sdk_env(home.path, tmp_path)
    agent = await spawn(env=env)
    result = await agent.initialize()
    assert result["agentCapabilities"]["mcpCapabilities"] == {"http": False, "sse": False}
    server = {"name": "tiny", "command": "x", "args": [], "env": []}
    sid = (await agent.new(home.workspace, mcpServers=[server]))["sessionId"]
    assert sid  # the session works; the log says why its server was not started
    await agent.prompt(sid, "hi")
    assert MESSAGE in agent.stderr() and json.dumps("tiny")[1:-1] in agent.stderr()
