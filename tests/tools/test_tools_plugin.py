"""The plugin's hook: registration through pluggy, the specs' shape and a cheap import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pluggy

from hermes_core import ToolSpec, hookspecs
from hermes_tools import plugin

NAMES = {"read_file", "write_file", "edit_file", "list_dir", "search", "terminal", "clarify", "todo"}


def test_hook_is_collected_by_pluggy() -> None:
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.register(plugin)
    manager.check_pending()
    (specs,) = manager.hook.hermes_tools()
    assert {spec.name for spec in specs} == NAMES


def test_specs_declare_kind_toolset_paths_and_schemas(specs: dict[str, ToolSpec]) -> None:
    kinds = {name: spec.kind for name, spec in specs.items()}
    assert kinds == {
        "read_file": "read",
        "write_file": "edit",
        "edit_file": "edit",
        "list_dir": "read",
        "search": "search",
        "terminal": "execute",
        "clarify": "think",
        "todo": "think",
    }
    for name in ("read_file", "write_file", "edit_file", "list_dir", "search"):
        assert specs[name].path_args == ("path",)
        assert specs[name].toolset == "core"
    assert specs["terminal"].command_arg == "command"
    assert specs["terminal"].toolset == "terminal"
    assert specs["clarify"].needs == frozenset({"clarify"})
    assert specs["terminal"].needs == frozenset()  # must stay usable where sudo cannot be answered
    assert specs["write_file"].preview is not None and specs["edit_file"].preview is not None
    for spec in specs.values():
        schema = json.loads(json.dumps(spec.schema))
        assert schema["type"] == "object"
        assert set(schema["required"]) <= set(schema["properties"])
        assert spec.description and spec.title and spec.describe


def test_titles_and_descriptions_are_one_short_line(specs: dict[str, ToolSpec]) -> None:
    def title(name: str, args: dict[str, object]) -> str:
        made = specs[name].title
        assert callable(made)
        return made(args)

    assert title("read_file", {"path": "src/app.py"}) == "Read src/app.py"
    assert title("terminal", {"command": "ls -la"}) == "Run: ls -la"
    assert title("edit_file", {"path": "a.py", "replace_all": True}) == "Edit a.py (every occurrence)"
    long_command = "echo " + "x" * 500 + "\nrm thing"
    for spec in specs.values():
        assert spec.describe is not None
        line = spec.describe({"command": long_command, "path": "p", "pattern": "x", "question": long_command})
        assert "\n" not in line and len(line) <= 200
        assert spec.describe({}) is not None  # malformed arguments never crash the announcement


def test_importing_the_plugin_is_cheap() -> None:
    code = (
        "import sys, hermes_tools.plugin as p; p.hermes_tools();"
        "print(sorted(m for m in sys.modules"
        " if m.startswith('hermes_tools.') or m in ('pydantic', 'aiohttp')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path(__file__).parent
    )
    assert out.stdout.strip() == "['hermes_tools.plugin']"
