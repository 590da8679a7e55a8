"""Tables a plugin declares with ``hermes_config_sections`` are known keys: ``hermes config get/set``
checks them against the plugin's model, and the unknown-key warning neither flags the table nor
misses a typo inside it. First-party ones (``mcp_servers``, ``delegation``) and a third party's."""

from __future__ import annotations

from pathlib import Path

from tests.cli import cli_helpers as h
from tests.cli.cli_helpers import Hermes

CONFIG = """model = "mock:echo"

[mcp_servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
env = { LOG_LEVEL = "warn" }
enabled = false

[delegation]
max_spawn_depth = 2
"""

KNOBS_PLUGIN = '''
"""A third-party plugin that reads its own [knobs] table."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from hermes_core import ConfigSection, hookimpl


class Knobs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    volume: int = 5
    label: str = "plain"


@hookimpl
def hermes_config_sections():
    return ConfigSection(name="knobs", summary="test knobs", settings_model=Knobs)
'''


def test_plugin_tables_are_known_keys(hermes: Hermes, home: Path) -> None:
    (home / "config.toml").write_text(CONFIG)
    got = hermes("config", "get", "mcp_servers.files.command")
    assert (got.returncode, got.stdout, got.stderr) == (0, "npx\n", "")
    assert hermes("config", "get", "mcp_servers.files.env").stdout == 'LOG_LEVEL = "warn"\n'
    # Unset keys of an entry show the model's default, like core keys.
    assert hermes("config", "get", "mcp_servers.files.connect_timeout_s").stdout == "30.0\n"
    assert hermes("config", "get", "delegation.max_spawn_depth").stdout == "2\n"
    assert hermes("config", "get", "delegation.max_child_tool_rounds").stdout == "20\n"
    # No command warns about the tables any more.
    run = hermes("run", "hello")
    assert run.returncode == 0 and run.stdout == "You said: hello\n"
    assert "unknown key" not in run.stderr, run.stderr


def test_plugin_table_values_are_checked_on_set(hermes: Hermes, home: Path) -> None:
    assert hermes("config", "set", "mcp_servers.notes.command", "uvx").returncode == 0
    assert hermes("config", "set", "mcp_servers.notes.args", '["notes-server"]').returncode == 0
    assert hermes("config", "set", "mcp_servers.notes.trust", "full").returncode == 0
    assert hermes("config", "set", "delegation.max_concurrent_children", "4").returncode == 0
    text = (home / "config.toml").read_text()
    assert '[mcp_servers.notes]\ncommand = "uvx"\nargs = [\n    "notes-server",\n]\ntrust = "full"' in text
    assert "[delegation]\nmax_concurrent_children = 4" in text
    for args, message in [
        (
            ("mcp_servers.notes.timeout_s", "0"),
            "invalid value for mcp_servers.notes.timeout_s: expected a number > 0",
        ),
        (("mcp_servers.notes.trust", "some"), "expected one of full, untrusted"),
        (
            ("delegation.max_spawn_depth", "0"),
            "invalid value for delegation.max_spawn_depth: expected an integer ≥ 1",
        ),
        (
            ("mcp_servers.notes.comand", "x"),
            "unknown key: mcp_servers.notes.comand (did you mean mcp_servers.notes.command?",
        ),
        (("delegation.max_depth", "2"), "did you mean delegation.max_spawn_depth?"),
    ]:
        result = hermes("config", "set", *args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr, result.stderr
    assert (home / "config.toml").read_text() == text  # nothing written by a refused set


def test_a_typo_inside_a_plugin_table_is_still_reported(hermes: Hermes, home: Path) -> None:
    (home / "config.toml").write_text(CONFIG.replace("enabled = false", "enabeld = false"))
    result = hermes("config", "get", "mcp_servers.files.command")
    assert (result.returncode, result.stdout) == (0, "npx\n")
    (line,) = [x for x in result.stderr.splitlines() if "unknown key" in x]
    assert "unknown key: mcp_servers.files.enabeld (did you mean mcp_servers.files.enabled?" in line


def test_a_third_party_plugin_declares_its_table(hermes: Hermes, home: Path, tmp_path: Path) -> None:
    site = h.write_distribution(
        tmp_path / "site-knobs", "knobs", {"knobs_plugin": KNOBS_PLUGIN}, {"knobs": "knobs_plugin"}
    )
    (home / "config.toml").write_text('model = "mock:echo"\n[knobs]\nvolume = 7\n')
    got = hermes("config", "get", "knobs.volume", pythonpath=[site])
    assert (got.returncode, got.stdout, got.stderr) == (0, "7\n", "")
    assert hermes("config", "get", "knobs.label", pythonpath=[site]).stdout == "plain\n"
    bad = hermes("config", "set", "knobs.volume", "loud", pythonpath=[site])
    assert bad.returncode == 2 and "invalid value for knobs.volume: expected an integer" in bad.stderr
    # Without the plugin the table is unknown again, and says so.
    alone = hermes("config", "get", "knobs.volume")
    assert alone.returncode == 2 and "unknown key: knobs.volume" in alone.stderr
