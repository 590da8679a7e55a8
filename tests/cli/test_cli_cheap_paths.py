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
    assert result.stdout == f"hermes {hermes_core.__version__} (hermes-kernel)\n"
    assert hermes_core.__version__ == metadata.version("hermes-kernel")
    assert hermes("version").stdout == result.stdout


ODD_TRANSPORT = """
from hermes_core import TransportSpec, hookimpl


async def factory(ctx):
    print("odd transport ran", flush=True)
    return 0


@hookimpl
def hermes_transports():
    return TransportSpec(name="oddcmd", summary="SUMMARY_TEXT", factory=factory, long_running=False)
"""


def _odd(root: Path, summary: str) -> Path:
    source = ODD_TRANSPORT.replace("SUMMARY_TEXT", summary)
    return h.write_distribution(root, "oddplug", {"oddplug": source}, {"oddplug": "oddplug"})


def _sections(out: str) -> tuple[str, str]:
    commands = out.split("Commands:", 1)[1].split("Transports:", 1)[0]
    return commands, out.split("Transports:", 1)[1] if "Transports:" in out else ""


def test_help_lists_only_transports_by_command_name_and_summary(
    hermes: Hermes, throwaway: Path, tmp_path: Path
) -> None:
    odd = _odd(tmp_path / "site-odd", "Serve odd things to odd clients.")
    result = hermes("--help", pythonpath=[throwaway, odd])
    assert result.returncode == 0, result.stderr
    commands, transports = _sections(result.stdout)
    for name in ("run", "plugins", "models", "config", "sessions", "version"):
        assert f"\n  {name} " in commands
    rows = {line.split()[0]: " ".join(line.split()[1:]) for line in transports.splitlines() if line.strip()}
    assert rows["throwaway"] == "A throwaway transport for tests."
    assert rows["oddcmd"] == "Serve odd things to odd clients."  # its command name, not "oddplug"
    assert rows["acp"].startswith("Serve the Agent Client Protocol")
    assert rows["api"].startswith("Serve the OpenAI-compatible HTTP")
    assert "tui" in rows
    for not_a_command in ("oddplug", "mock", "sqlite", "tools", "slash", "model-switch", "openai"):
        assert not_a_command not in rows
        assert f"\n  {not_a_command} " not in result.stdout
    assert "plugin command" not in result.stdout
    ran = hermes("oddcmd", pythonpath=[throwaway, odd])
    assert ran.returncode == 0 and ran.stdout == "odd transport ran\n", ran.stderr
    assert hermes("oddplug", pythonpath=[throwaway, odd]).returncode == 2


def test_help_follows_a_reinstalled_plugin(hermes: Hermes, tmp_path: Path) -> None:
    site = tmp_path / "site-odd"
    _odd(site, "The first summary.")
    assert "The first summary." in hermes("--help", pythonpath=[site]).stdout
    import shutil

    shutil.rmtree(site)
    _odd(site, "The second summary.")
    assert "The second summary." in hermes("--help", pythonpath=[site]).stdout


def test_help_survives_a_plugin_that_raises_at_import(hermes: Hermes, broken: Path) -> None:
    for _ in range(2):  # the first run loads the plugins, the second reads what it remembered
        result = hermes("--help", pythonpath=[broken])
        assert result.returncode == 0
        assert "Plugins that failed to load: broken (see `hermes plugins`)." in result.stdout
        assert "\n  broken " not in result.stdout
        assert result.stderr == ""


def test_help_hides_disabled_plugins(hermes: Hermes, throwaway: Path) -> None:
    result = hermes("--help", pythonpath=[throwaway], env={"HERMES_DISABLE_PLUGINS": "throwaway"})
    assert result.returncode == 0
    assert "throwaway" not in result.stdout


def _modules_after(args: list[str], home: Path, pythonpath: list[Path]) -> set[str]:
    code = (
        "import contextlib, io, json, sys\n"
        "from hermes_launcher import main\n"
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
    # The first --help loads the plugins once and remembers their transports; from then on it
    # imports none (`hermes --help` has a 100 ms budget).
    _modules_after(["--help"], home, [throwaway, broken])
    for args in (["--version"], ["--help"]):
        modules = _modules_after(args, home, [throwaway, broken])
        bad = sorted(
            m for m in modules if m.startswith(FORBIDDEN_PREFIXES) or m.split(".")[0] in PLUGIN_PACKAGES
        )
        assert bad == [], f"{args} imported {bad}"
    assert "click" not in _modules_after(["--version"], home, [])
    _modules_after(["--help"], home, [])
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
