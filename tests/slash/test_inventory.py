"""``/tools``, ``/plugins`` and ``/version``."""

from __future__ import annotations

from pathlib import Path

import hermes_core
from hermes_core import Kernel, Session
from hermes_core.testing import make_kernel

from .helpers import data, run
from .test_help import DeployPlugin


async def test_tools_lists_what_the_model_sees_by_toolset(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "/tools")
    toolsets = data(result)["toolsets"]
    assert toolsets["terminal"] == ["terminal"]
    assert {"read_file", "write_file", "edit_file"} <= set(toolsets["core"])
    lines = (result.output or "").splitlines()
    total = sum(len(v) for v in toolsets.values())
    assert lines[0] == f"The model sees {total} tools:"
    terminal = lines.index("terminal:")
    assert lines[terminal + 1].split()[0] == "terminal"


async def test_tools_leaves_out_hidden_tools(kernel: Kernel, session: Session) -> None:
    session.set_tool_filter(frozenset({"terminal"}))
    result = await run(kernel, session, "/tools")
    assert "terminal" not in data(result)["toolsets"]
    assert data(result)["hidden"] == ["terminal"]
    assert (result.output or "").splitlines()[-1] == "Hidden here: terminal"


async def test_tools_on_the_cli_leaves_out_tools_that_ask(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "/tools", surface="cli")
    names = {n for names in data(result)["toolsets"].values() for n in names}
    assert "clarify" not in names and "clarify" in data(result)["hidden"]


async def test_tools_without_tool_plugins(workspace: Path) -> None:
    k = make_kernel(entry_points=["mock", "slash"], settings={"model": "mock:echo"})
    async with k.running():
        result = await run(k, None, "/tools")
        assert data(result)["toolsets"] == {"core": ["request_secret"]}


async def test_plugins_lists_each_plugin_with_its_status(workspace: Path) -> None:
    k = make_kernel(DeployPlugin(), entry_points=["mock", "slash"], settings={"model": "mock:echo"})
    async with k.running():
        result = await run(k, None, "/plugins")
        plugins = {p["name"]: p for p in data(result)["plugins"]}
        assert set(plugins) == {"mock", "slash", "deployer"}
        assert plugins["slash"]["first_party"] is True and plugins["slash"]["status"] == "ok"
        assert plugins["deployer"]["first_party"] is False
        lines = (result.output or "").splitlines()
        assert lines[0] == "3 plugins:"
        deployer = next(line for line in lines if line.strip().startswith("deployer"))
        assert "ok" in deployer and "third-party" in deployer and "slash_commands" in deployer


async def test_version_reports_the_package_version(kernel: Kernel) -> None:
    result = await run(kernel, None, "/version")
    assert result.output == f"Hermes {hermes_core.__version__}"
    assert data(result) == {"version": hermes_core.__version__}
