"""``/help``: every registered command by category (third-party ones too), or one in detail."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core import (
    CommandContext,
    CommandResult,
    CommandSpec,
    CommandUsageError,
    Kernel,
    Session,
    hookimpl,
)
from hermes_core.testing import make_kernel

from .conftest import ALL_PLUGINS
from .helpers import data, run

FOUNDATION = {"help", "model", "compress", "title", "branch", "usage", "status", "stop"}
ADDED = {
    "new",
    "resume",
    "history",
    "undo",
    "retry",
    "steer",
    "queue",
    "approvals",
    "tools",
    "plugins",
    "version",
}
FIRST_PARTY = FOUNDATION | ADDED | {"reload", "reload-mcp"}


async def test_help_lists_every_command_grouped_by_category(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "/help")
    text = result.output or ""
    for usage in ("/help [COMMAND]", "/compress [FOCUS]", "/title [TEXT]", "/branch [TITLE]", "/usage"):
        assert usage in text
    assert "/model [--once | --global] [PROVIDER:MODEL]" in text
    assert "(also /fork)" in text
    lines = text.splitlines()
    assert lines.index("Info:") < lines.index("Model:") < lines.index("Session:")
    session_block = lines[lines.index("Session:") :]
    assert any(line.strip().startswith("/stop") for line in session_block)
    assert {c["name"] for c in data(result)["commands"]} == FIRST_PARTY


async def test_help_works_without_a_session(kernel: Kernel) -> None:
    result = await run(kernel, None, "/help")
    assert "/status" in (result.output or "")


async def test_help_marks_commands_the_surface_cannot_run(kernel: Kernel, session: Session) -> None:
    on_acp = await run(kernel, session, "/help", surface="acp")
    stop_line = next(line for line in (on_acp.output or "").splitlines() if line.strip().startswith("/stop"))
    assert stop_line.endswith("(not available here)")
    stop = next(c for c in data(on_acp)["commands"] if c["name"] == "stop")
    assert stop["available"] is False
    on_tui = await run(kernel, session, "/help", surface="tui")
    assert "not available here" not in (on_tui.output or "")


@pytest.mark.parametrize("name", ["branch", "/branch", "fork", "/fork"])
async def test_help_details_one_command_by_name_or_alias(kernel: Kernel, session: Session, name: str) -> None:
    result = await run(kernel, session, f"/help {name}")
    lines = (result.output or "").splitlines()
    assert lines[0] == "/branch [TITLE]"
    assert "  Aliases: /fork" in lines
    assert "  Cannot run while a turn is running." in lines
    assert data(result)["command"]["name"] == "branch"


async def test_help_of_stop_on_acp_says_it_is_not_available(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "/help stop", surface="acp")
    assert "  Not available here (acp)." in (result.output or "").splitlines()


async def test_help_of_an_unknown_command_is_a_usage_error(kernel: Kernel, session: Session) -> None:
    with pytest.raises(CommandUsageError) as caught:
        await kernel.dispatch_slash(session, "/help frobnicate", surface="tui")
    assert caught.value.usage == "/help [COMMAND]"
    assert "unknown command /frobnicate" in str(caught.value)
    with pytest.raises(CommandUsageError):
        await kernel.dispatch_slash(session, "/help model title", surface="tui")


async def _deploy(ctx: CommandContext) -> CommandResult:
    return CommandResult(kind="exec", output=f"deploying {ctx.args or 'everything'}")


class DeployPlugin:
    """A third-party plugin contributing one command in its own category."""

    hermes_plugin_name = "deployer"

    @hookimpl
    def hermes_slash_commands(self) -> CommandSpec:
        return CommandSpec(
            name="deploy",
            summary="Ship the workspace somewhere",
            handler=_deploy,
            usage="/deploy [TARGET]",
            aliases=("ship",),
            category="ops",
            needs_terminal_ui=True,
        )


async def test_help_lists_third_party_commands(workspace: Path) -> None:
    k = make_kernel(DeployPlugin(), entry_points=ALL_PLUGINS, settings={"model": "mock:echo"})
    async with k.running():
        session = await k.open_session(source="cli", owner="t", cwd=workspace)
        listing = await run(k, session, "/help")
        lines = (listing.output or "").splitlines()
        ops = lines.index("Ops:")
        assert lines[ops + 1].split()[:2] == ["/deploy", "[TARGET]"]
        assert "Ship the workspace somewhere (also /ship)" in lines[ops + 1]
        assert {c["name"] for c in data(listing)["commands"]} == FIRST_PARTY | {"deploy"}
        detail = await run(k, session, "/help ship")
        assert "  Only available in the terminal UI." in (detail.output or "").splitlines()
        assert (await run(k, session, "/ship prod")).output == "deploying prod"
