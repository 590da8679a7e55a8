"""``/approvals``, ``/reload`` and ``/reload-mcp``."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core import CommandNotAvailable, CommandUsageError, Kernel, Session
from hermes_core.testing import MemorySettingsStore, make_kernel

from .conftest import ALL_PLUGINS
from .helpers import data, reply, run


async def test_approvals_shows_the_profile_and_the_choices(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "/approvals")
    lines = (result.output or "").splitlines()
    assert lines[0] == "Approval profile: default"
    assert lines[2].startswith(" * default ")
    assert data(result)["profile"] == "default"


async def test_approvals_sets_and_persists_the_profile(kernel: Kernel, session: Session) -> None:
    await reply(session, "make the session durable")
    result = await run(kernel, session, "/approvals ask_everything")
    assert (
        result.output
        == "Approval profile set to ask_everything: asks before edits and before running anything."
    )
    assert data(result) == {"profile": "ask_everything", "previous": "default"}
    assert session.profile == "ask_everything"
    record = await kernel.storage.get_session(session.id)
    assert record is not None and record.profile == "ask_everything"
    again = await run(kernel, session, "/approvals ask_everything")
    assert again.output == "Approval profile is already ask_everything."


@pytest.mark.parametrize("surface", ["tui", "cli"])
async def test_approvals_off_when_named_explicitly(kernel: Kernel, session: Session, surface: str) -> None:
    await run(kernel, session, "/approvals off", surface=surface)
    assert session.profile == "off"


@pytest.mark.parametrize(
    "text", ["/approvals yolo", "/approvals on", "/approvals default off", "/approvals OFF"]
)
async def test_approvals_refuses_anything_else(kernel: Kernel, session: Session, text: str) -> None:
    with pytest.raises(CommandUsageError):
        await kernel.dispatch_slash(session, text, surface="tui")
    assert session.profile == "default"


async def test_approvals_off_is_not_available_on_acp(kernel: Kernel, session: Session) -> None:
    with pytest.raises(CommandNotAvailable) as caught:
        await kernel.dispatch_slash(session, "/approvals off", surface="acp")
    assert "not available here" in str(caught.value)
    assert session.profile == "default"
    await run(kernel, session, "/approvals accept_edits", surface="acp")
    assert session.profile == "accept_edits"


async def test_reload_applies_the_store_again(workspace: Path) -> None:
    store = MemorySettingsStore({"model": "mock:echo", "storage": {"backend": "memory"}})
    k = make_kernel(entry_points=ALL_PLUGINS, settings=store.load(), store=store)
    async with k.running():
        session = await k.open_session(source="tui", owner="t", cwd=workspace)
        assert await reply(session, "hi") == "You said: hi"
        store.set("model", "mock:alt")
        result = await run(k, session, "/reload")
        assert result.output == "Settings reloaded. Default model: mock:alt."
        assert data(result) == {"reloaded": True, "config_path": None, "model": "mock:alt"}
        assert session.info().model == "mock:alt"
        assert (await reply(session, "hi")).startswith("alt: ")


async def test_reload_without_a_store_says_so(kernel: Kernel) -> None:
    result = await run(kernel, None, "/reload")
    assert result.output == "Nothing to reload: this Hermes was started without a settings file."
    assert data(result)["reloaded"] is False


async def test_reload_mcp_is_truthful(kernel: Kernel) -> None:
    result = await run(kernel, None, "/reload-mcp")
    assert result.output == "MCP support is not loaded (the mcp plugin is not installed or is disabled)."
    assert data(result) == {"servers": []}


async def test_reload_mcp_with_the_plugin_and_no_servers() -> None:
    k = make_kernel(entry_points=[*ALL_PLUGINS, "mcp"], settings={"model": "mock:echo"})
    async with k.running():
        result = await run(k, None, "/reload-mcp")
    assert result.output == "No MCP servers are configured ([mcp_servers] in config.toml)."
    assert data(result) == {"servers": []}
