"""``hermes --version`` and ``hermes --help``: constant answers that import no plugin."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import hermes_core
from tests.cli import cli_helpers as h
from tests.cli.cli_helpers import Hermes

# What the cheap paths must never import: plugin machinery, pydantic and any plugin package.
FORBIDDEN_PREFIXES = (
    "stevedore",
    "pluggy",
    "pydantic",
    "hermes_core.kernel",
    "hermes_core.loader",
    "aiohttp",
)
PLUGIN_PACKAGES = (
    "hermes_mock",
    "hermes_sqlite",
    "hermes_openai",
    "hermes_anthropic",
    "hermes_slash",
    "hermes_model_switch",
    "hermes_tools",
    "throwaway_plugin",
    "brokenplug",
)


def test_version_prints_the_constant_matching_the_distribution(hermes: Hermes) -> None:
    result = hermes("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"hermes {hermes_core.__version__}\n"
    assert hermes_core.__version__ == metadata.version("hermes-agent")
    assert hermes("version").stdout == result.stdout


def test_help_lists_builtins_and_plugin_entry_points(hermes: Hermes, throwaway: Path) -> None:
    result = hermes("--help", pythonpath=[throwaway])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    commands = out.split("Commands:", 1)[1].split("Plugin commands:", 1)[0]
    for name in ("run", "plugins", "models", "config", "sessions", "version"):
        assert f"\n  {name} " in commands
    plugin_section = out.split("Plugin commands:", 1)[1]
    assert "throwaway" in plugin_section and "plugin command (from throwaway)" in plugin_section
    for name in ("mock", "sqlite", "tools"):
        assert f"\n  {name} " in plugin_section


def test_help_survives_a_plugin_that_raises_at_import(hermes: Hermes, broken: Path) -> None:
    result = hermes("--help", pythonpath=[broken])
    assert result.returncode == 0
    assert "broken" in result.stdout.split("Plugin commands:", 1)[1]
    assert result.stderr == ""


def test_help_hides_disabled_plugins(hermes: Hermes, throwaway: Path) -> None:
    result = hermes("--help", pythonpath=[throwaway], env={"HERMES_DISABLE_PLUGINS": "throwaway"})
    assert result.returncode == 0
    assert "throwaway" not in result.stdout


def _modules_after(args: list[str], home: Path, pythonpath: list[Path]) -> set[str]:
    code = (
        "import contextlib, io, json, sys\n"
        "from hermes_cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({args!r})\n"
        "assert code == 0, code\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=h.clean_env(home, pythonpath=pythonpath),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout))


def test_cheap_paths_import_no_plugin_stevedore_or_pydantic(
    home: Path, throwaway: Path, broken: Path
) -> None:
    for args in (["--version"], ["--help"]):
        modules = _modules_after(args, home, [throwaway, broken])
        bad = sorted(
            m for m in modules if m.startswith(FORBIDDEN_PREFIXES) or m.split(".")[0] in PLUGIN_PACKAGES
        )
        assert bad == [], f"{args} imported {bad}"
    assert "click" not in _modules_after(["--version"], home, [])
    assert "click" not in _modules_after(["--help"], home, [])


def test_click_renders_the_same_root_help(hermes: Hermes, throwaway: Path) -> None:
    fast = hermes("--help", pythonpath=[throwaway])
    via_click = hermes("--no-plugin", "nothing", "--help", pythonpath=[throwaway])
    assert via_click.returncode == 0
    assert via_click.stdout == fast.stdout
    from hermes_cli.app import cli

    for param in cli.params:
        assert param.opts[0] in fast.stdout
        assert getattr(param, "help", None) is None or " ".join(str(param.help).split()[:3]) in fast.stdout
