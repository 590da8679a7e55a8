"""The one test that loads the REAL installed entry points (CONTRIBUTING.md, "Checks").

First-party plugins are found only through ``[project.entry-points."hermes.plugins"]`` in the root
pyproject; this checks that every one of them is installed, importable and loads strictly, and that
together they provide what the product needs (providers, storage, tools, commands).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import tomllib
from pathlib import Path

import pytest

import hermes_core
from hermes_core import Kernel, ToolCompleted, hookspecs

ROOT = Path(__file__).resolve().parents[1]
GROUP = "hermes.plugins"
DECLARED: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "entry-points"
][GROUP]
FIRST_PARTY = {"slash", "model-switch", "openai", "anthropic", "mock", "sqlite", "tools"}
# What each first-party plugin must contribute, by registry table (a subset: plugins may add more).
EXPECTED: dict[str, dict[str, set[str]]] = {
    "openai": {"providers": {"openai"}},
    "anthropic": {"providers": {"anthropic"}},
    "mock": {"providers": {"mock"}},
    "sqlite": {"storage": {"sqlite"}},
    "tools": {
        "tools": {"read_file", "write_file", "edit_file", "list_dir", "search", "terminal", "clarify", "todo"}
    },
    "slash": {"commands": {"help", "status", "usage", "title", "compress", "branch", "stop"}},
    "model-switch": {"commands": {"model"}},
}


def _missing_modules() -> dict[str, str]:
    """Return the declared entry points whose module does not exist yet (still being written)."""
    return {name: target for name, target in DECLARED.items() if importlib.util.find_spec(target) is None}


def test_pyproject_declares_every_first_party_plugin_as_a_plugin_module() -> None:
    assert set(DECLARED) >= FIRST_PARTY
    # Two packages are named differently from their entry points.
    packages = {"tui": "hermes_tui_gateway", "api": "hermes_api_server"}
    for name, target in DECLARED.items():
        package = packages.get(name, "hermes_" + name.replace("-", "_"))
        assert target == f"{package}.plugin", f"entry point {name!r} should point at {package}.plugin"


def test_the_installed_metadata_matches_pyproject() -> None:
    """A stale editable install would silently load an old plugin set."""
    installed = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=GROUP)}
    for name, target in DECLARED.items():
        assert installed.get(name) == target, (
            f"{name!r} not installed as {target}: reinstall with pip install -e ."
        )
        dist = importlib.metadata.entry_points(group=GROUP, name=name)
        owners = {ep.dist.name: str(getattr(ep.dist, "_path", "?")) for ep in dist if ep.dist}
        assert list(owners) == ["hermes-kernel"], (
            f"{name!r} is declared by {owners}: remove the other metadata (a checkout from before the "
            "rename keeps a stale hermes_agent.egg-info; pip uninstall hermes-agent removes an install)"
        )


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_entry_point_module_imports_and_implements_only_known_hooks(name: str) -> None:
    target = DECLARED[name]
    if importlib.util.find_spec(target) is None:
        pytest.fail(f"{target} does not exist (plugin {name!r} is declared in pyproject.toml)")
    module = importlib.import_module(target)
    hooks = {attr for attr in dir(module) if attr.startswith("hermes_") and callable(getattr(module, attr))}
    known = {attr for attr in dir(hookspecs) if attr.startswith("hermes_")}
    assert hooks, f"{target} implements no hermes_* hook"
    assert hooks <= known, f"{target} has hooks with no spec: {sorted(hooks - known)}"


def test_kernel_loads_every_real_entry_point_strictly() -> None:
    missing = _missing_modules()
    kernel = Kernel.create(entry_points=True, disabled=sorted(missing), strict=True)
    registry = kernel.registry
    records = {record.name: record for record in registry.plugins}
    assert not registry.failures, [(p.name, p.failed) for p in registry.failures]
    for name in set(DECLARED) - set(missing):
        record = records[name]
        assert record.source == "entry_point"
        assert record.distribution == "hermes-kernel" and record.first_party
        assert record.version == hermes_core.__version__
        assert record.hooks, f"{name} registered no hook"
    for plugin, tables in EXPECTED.items():
        if plugin in missing:
            continue
        for table, names in tables.items():
            provided = {
                key for (kind, key), owner in registry.owners.items() if kind == table and owner == plugin
            }
            assert names <= provided, f"{plugin} should provide {table} {sorted(names - provided)}"
            assert names <= set(getattr(registry, table))
    if missing:
        pytest.fail(f"loaded all but the missing plugin(s) {', '.join(sorted(missing))}")


async def test_real_plugins_run_a_turn_on_sqlite_with_the_mock_model(tmp_path: Path) -> None:
    """The entry-point path end to end: SQLite storage, the mock provider and a real tool."""
    needed = {"sqlite", "mock", "tools"}
    if needed & set(_missing_modules()):
        pytest.fail(f"needs the {', '.join(sorted(needed))} plugins")
    (tmp_path / "notes.txt").write_text("first line of notes\n", encoding="utf-8")
    settings = {"model": "mock:echo", "data_dir": str(tmp_path / "data"), "titles": {"refine": False}}
    kernel = Kernel.create(entry_points=sorted(needed), strict=True, settings=settings)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="test", cwd=tmp_path, profile="off")
        turn = await session.submit('[[tool read_file {"path": "notes.txt"}]]', owner="test")
        completed = [event async for event in turn.events() if isinstance(event, ToolCompleted)]
        outcome = await turn.outcome
    assert outcome.status == "complete"
    assert len(completed) == 1 and not completed[0].is_error
    assert "first line of notes" in completed[0].result_text
    assert (tmp_path / "data" / "hermes.sqlite3").is_file()
