"""A ``CommandUsageError`` with a message shows the message AND the usage line on every surface.

A third-party command raises ``CommandUsageError("/deploy TARGET", "/deploy needs a target")``;
``hermes run``, the TUI gateway and ACP (each a real subprocess) all show both. The API server
never reads chat text for commands, so there the text reaches the model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core import CommandUsageError
from tests.cli.cli_helpers import run_hermes, write_distribution
from tests.tui.client import RpcFailure

from .transports import acp_agent, acp_reply, api_chat, make_home, reply_text, start_api, start_tui

STRICT_COMMAND = '''
"""A command that needs a target and says so."""
from __future__ import annotations

from hermes_core import CommandResult, CommandSpec, CommandUsageError, hookimpl


async def deploy(ctx):
    if not ctx.args:
        raise CommandUsageError("/deploy TARGET", "/deploy needs a target")
    return CommandResult(kind="exec", output=f"deploying {ctx.args}")


@hookimpl
def hermes_slash_commands():
    return CommandSpec(name="deploy", summary="Ship it", handler=deploy, usage="/deploy TARGET")
'''

SHOWN = "/deploy needs a target; usage: /deploy TARGET"


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    home, workspace = make_home(tmp_path)
    site = write_distribution(
        tmp_path / "site", "deployer", {"deployer": STRICT_COMMAND}, {"deployer": "deployer"}
    )
    return home, workspace, {"PYTHONPATH": str(site)}


def test_the_error_text_joins_message_and_usage() -> None:
    assert str(CommandUsageError("/x A", "/x needs A")) == "/x needs A; usage: /x A"
    assert str(CommandUsageError("/x A")) == "usage: /x A"
    quoted = CommandUsageError("/x A", "bad A; usage: /x A")  # already quotes it: not repeated
    assert str(quoted) == "bad A; usage: /x A" and quoted.reason == "bad A; usage: /x A"


def test_cli_shows_message_and_usage(places: tuple[Path, Path, dict[str, str]]) -> None:
    home, workspace, env = places
    result = run_hermes(home, "run", "/deploy", env=env, cwd=workspace)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines()[-1] == f"Error: {SHOWN}"
    ok = run_hermes(home, "run", "/deploy prod", env=env, cwd=workspace)
    assert ok.returncode == 0 and ok.stdout == "deploying prod\n", ok.stderr


def test_tui_shows_message_and_usage(places: tuple[Path, Path, dict[str, str]]) -> None:
    home, workspace, env = places
    with start_tui(home, env=env) as tui:
        sid = tui.create(cwd=str(workspace))
        with pytest.raises(RpcFailure) as caught:
            tui.call("command.dispatch", session_id=sid, command="/deploy")
        assert caught.value.code == 4004
        assert caught.value.message == SHOWN
        assert caught.value.data == {"usage": "/deploy TARGET"}
        assert (
            tui.call("command.dispatch", session_id=sid, command="/deploy prod")["output"] == "deploying prod"
        )


async def test_acp_shows_message_and_usage(places: tuple[Path, Path, dict[str, str]]) -> None:
    home, workspace, env = places
    async with acp_agent(home, workspace, env=env) as agent:
        sid = (await agent.new(workspace))["sessionId"]
        assert await acp_reply(agent, sid, "/deploy") == SHOWN
        assert await acp_reply(agent, sid, "/deploy prod") == "deploying prod"


async def test_the_api_never_reads_commands(places: tuple[Path, Path, dict[str, str]]) -> None:
    home, _workspace, env = places
    server = start_api(home, env=env)
    try:
        reply = await api_chat(server, "/deploy", session_id="usage-api")
        assert reply_text(reply) == "You said: /deploy"
    finally:
        server.stop()
