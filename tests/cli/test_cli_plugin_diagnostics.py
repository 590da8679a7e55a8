"""What a plugin author sees over the real CLI: help, failures, suggestions, tracebacks, selection."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli import cli_helpers as h
from tests.cli.cli_helpers import Hermes

# A plugin named "beamplug" whose transport command is "beam": help must list "beam".
RENAMED_TRANSPORT = """
from hermes_core import TransportSpec, hookimpl


async def factory(ctx):
    print("beam ran", flush=True)
    return 0


@hookimpl
def hermes_transports():
    return TransportSpec(name="beam", summary="Beam prompts over a pretend wire.", factory=factory)
"""

MISSPELT_HOOK = """
from hermes_core import ToolSpec, hookimpl


@hookimpl
def hermes_register_tool():
    return None
"""

UNMARKED = """
from hermes_core import hookimpl


def hermes_tools():
    return None


def hermes_slash_command():
    return None


def hermes_helper_not_a_hook():
    return None


@hookimpl
def hermes_lifespan(kernel):
    return None
"""

SECOND_BROKEN = """
import json

json.loads("{not json")
"""


@pytest.fixture
def renamed(tmp_path: Path) -> Path:
    return h.write_distribution(
        tmp_path / "site-beam", "beam-dist", {"beam_plugin": RENAMED_TRANSPORT}, {"beamplug": "beam_plugin"}
    )


@pytest.fixture
def two_broken(tmp_path: Path) -> Path:
    root = tmp_path / "site-two"
    h.write_distribution(root, "brokenplug", {"brokenplug": h.BROKEN_PLUGIN}, {"broken": "brokenplug"})
    h.write_distribution(root, "typoplug", {"typoplug": MISSPELT_HOOK}, {"typo": "typoplug"})
    h.write_distribution(root, "jsonplug", {"jsonplug": SECOND_BROKEN}, {"badjson": "jsonplug"})
    return root


def _section(help_text: str, title: str) -> list[str]:
    """The first word of every line of one help section (``Commands:``, ``Transports:``)."""
    lines = help_text.splitlines()
    if f"{title}:" not in lines:
        return []
    start = lines.index(f"{title}:") + 1
    words: list[str] = []
    for line in lines[start:]:
        if not line.strip():
            break
        if line.startswith("  ") and not line.startswith("   "):
            words.append(line.split()[0])
    return words


def test_help_lists_a_transport_by_its_command_name_and_summary(hermes: Hermes, renamed: Path) -> None:
    for args in (["--help"], ["-h"], ["help"], ["--plugin", "beamplug", "--help"]):
        shown = hermes(*args, pythonpath=[renamed])
        assert shown.returncode == 0, shown.stderr
        transports = _section(shown.stdout, "Transports")
        assert "beam" in transports and "beamplug" not in transports, shown.stdout
        assert "Beam prompts over a pretend wire." in shown.stdout
        assert "beamplug" not in shown.stdout and "plugin command" not in shown.stdout
        commands = _section(shown.stdout, "Commands")
        assert commands == [
            "chat",
            "run",
            "plugins",
            "models",
            "config",
            "sessions",
            "keys",
            "schema",
            "scenario",
            "version",
            "help",
        ]
    # Only the plugins' real transports are listed: the first-party ones and beam.
    assert set(_section(hermes("--help", pythonpath=[renamed]).stdout, "Transports")) == {
        "acp",
        "api",
        "beam",
        "pi",
        "tui",
    }
    ran = hermes("beam", pythonpath=[renamed])
    assert ran.returncode == 0 and ran.stdout == "beam ran\n", ran.stderr
    wrong = hermes("beamplug", pythonpath=[renamed])
    assert wrong.returncode == 2 and "plugin 'beamplug' provides the command(s): beam" in wrong.stderr


def test_a_plugin_left_out_is_not_listed(hermes: Hermes, renamed: Path) -> None:
    hermes("--help", pythonpath=[renamed])  # remember it first, so the cache cannot help
    hidden = hermes("--no-plugin", "beamplug", "--help", pythonpath=[renamed])
    assert hidden.returncode == 0, hidden.stderr
    assert "beam" not in _section(hidden.stdout, "Transports")
    assert "Beam prompts" not in hidden.stdout
    env_hidden = hermes("--help", pythonpath=[renamed], env={"HERMES_DISABLE_PLUGINS": "beamplug"})
    assert "beam" not in _section(env_hidden.stdout, "Transports")


def test_plugins_exits_non_zero_and_names_every_failure(hermes: Hermes, two_broken: Path) -> None:
    result = hermes("plugins", pythonpath=[two_broken])
    assert result.returncode == 1, result.stdout
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert "broken on purpose" in rows["broken"] and "FAILED" in rows["badjson"]
    assert "FAILED" in rows["typo"] and rows["mock"].endswith("ok")
    assert "3 plugin(s) failed to load: badjson, broken, typo" in result.stderr
    assert "HERMES_DEBUG=1" in result.stderr and "Traceback" not in result.stderr

    checked = hermes("plugins", "--check", pythonpath=[two_broken])
    assert checked.returncode == 1
    assert {line.split()[0] for line in checked.stdout.splitlines()[1:]} == {"badjson", "broken", "typo"}
    healthy = hermes("plugins", "--check")
    assert healthy.returncode == 0 and healthy.stdout == "", healthy.stderr


def test_strict_mode_reports_every_failure(hermes: Hermes, two_broken: Path) -> None:
    strict = {"HERMES_STRICT_PLUGINS": "1"}
    table = hermes("plugins", pythonpath=[two_broken], env=strict)
    assert table.returncode == 1
    assert {"broken", "badjson", "typo", "mock"} <= {line.split()[0] for line in table.stdout.splitlines()}
    run = hermes("run", "hi", pythonpath=[two_broken], env=strict)
    assert run.returncode == 1 and run.stdout == ""
    assert "3 plugins failed:" in run.stderr
    for name in ("'broken'", "'badjson'", "'typo'"):
        assert f"plugin {name} failed" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_a_misspelt_hook_gets_a_suggestion(hermes: Hermes, two_broken: Path) -> None:
    result = hermes("plugins", pythonpath=[two_broken])
    row = next(line for line in result.stdout.splitlines() if line.startswith("typo "))
    assert "unknown hook hermes_register_tool (did you mean hermes_tools?)" in row


def test_hermes_debug_shows_the_import_traceback(hermes: Hermes, two_broken: Path) -> None:
    result = hermes("plugins", pythonpath=[two_broken], env={"HERMES_DEBUG": "1"})
    assert result.returncode == 1
    assert "--- broken ---" in result.stderr and "Traceback (most recent call last)" in result.stderr
    assert 'brokenplug.py", line 2' in result.stderr and "RuntimeError: broken on purpose" in result.stderr
    assert "json.decoder.JSONDecodeError" in result.stderr
    both = {"HERMES_DEBUG": "1", "HERMES_STRICT_PLUGINS": "1"}
    strict = hermes("run", "hi", pythonpath=[two_broken], env=both)
    assert strict.returncode == 1 and "RuntimeError: broken on purpose" in strict.stderr
    assert "Traceback (most recent call last)" in strict.stderr


def test_with_plugin_adds_to_the_selection_instead_of_replacing_it(hermes: Hermes, renamed: Path) -> None:
    replaced = hermes("--plugin", "mock", "run", "hi")
    assert replaced.returncode == 2 and "unknown storage backend 'sqlite'" in replaced.stderr
    added = hermes("--with-plugin", "mock", "run", "hi", env={"HERMES_PLUGINS": "sqlite"})
    assert added.returncode == 0 and added.stdout == "You said: hi\n", added.stderr
    limited = {"HERMES_PLUGINS": "mock,sqlite"}
    listed = hermes("--with-plugin", "beamplug", "plugins", pythonpath=[renamed], env=limited)
    assert {line.split()[0] for line in listed.stdout.splitlines()[1:]} == {"mock", "sqlite", "beamplug"}
    help_text = hermes("--help").stdout
    assert "--with-plugin NAME" in help_text and "Load this plugin as well" in help_text
    unknown = hermes("--with-plugin", "nosuch", "plugins")
    assert "unknown plugin 'nosuch' in --with-plugin" in unknown.stderr


def test_a_hook_without_hookimpl_is_reported(hermes: Hermes, tmp_path: Path) -> None:
    site = h.write_distribution(
        tmp_path / "site-unmarked", "unmarked", {"unmarked": UNMARKED}, {"unmarked": "unmarked"}
    )
    result = hermes("plugins", pythonpath=[site])
    assert result.returncode == 0, result.stderr  # it loads: the marked hook works
    assert (
        "plugin 'unmarked': hermes_tools is not marked with @hookimpl, so it is never called" in result.stderr
    )
    wording = "hermes_slash_command is not a hook and not marked with @hookimpl"
    assert f"{wording} (did you mean hermes_slash_commands?)" in result.stderr
    assert "hermes_helper_not_a_hook" not in result.stderr
