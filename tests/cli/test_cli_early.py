"""``hermes NAME`` calls a plugin's ``hermes.early`` hook before loading plugins (hermes_cli/early.py)."""

from __future__ import annotations

import builtins
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes_cli.early import find_early
from hermes_cli.entry_points import installed_plugins
from tests.cli.cli_helpers import THROWAWAY_SETTINGS, THROWAWAY_TRANSPORT, run_hermes, write_distribution

EARLY_HOOK = '''
"""Reports, on stderr, the arguments it got and whether click was already imported."""
import json
import sys


def begin(args, selected):
    report = {"args": args, "click": "click" in sys.modules, "tools": selected("tools")}
    sys.stderr.write("EARLY " + json.dumps(report) + "\\n")
    sys.stderr.flush()


def explode(args, selected):
    raise RuntimeError("early hook failed on purpose")


def with_context(args, selected, early):
    report = {"fingerprint": early.fingerprint(), "cache": str(early.cache_dir)}
    sys.stderr.write("CONTEXT " + json.dumps(report) + "\\n")
    sys.stderr.flush()
'''


def _dist(root: Path, hook: str = "early_hook:begin", name: str = "throwaway") -> Path:
    write_distribution(
        root,
        "throwaway",
        {
            "throwaway_transport": THROWAWAY_TRANSPORT,
            "throwaway_settings": THROWAWAY_SETTINGS,
            "early_hook": EARLY_HOOK,
        },
        {"throwaway": "throwaway_transport"},
    )
    (info,) = root.glob("*.dist-info")
    with (info / "entry_points.txt").open("a", encoding="utf-8") as fh:
        fh.write(f"\n[hermes.early]\n{name} = {hook}\n")
    return root


def test_hook_runs_first_with_the_arguments(tmp_path: Path) -> None:
    """The hook sees the arguments after the command name, before click is imported."""
    root = _dist(tmp_path / "dist")
    result = run_hermes(tmp_path, "throwaway", "--flag", "x", pythonpath=[root])
    assert result.returncode == 0, result.stderr
    early = result.stderr.index('EARLY {"args": ["--flag", "x"], "click": false, "tools": true}')
    assert early < result.stderr.index("factory started")


def test_hook_is_told_the_plugin_selection(tmp_path: Path) -> None:
    """The hook's ``selected`` follows HERMES_DISABLE_PLUGINS, so a static answer can follow it."""
    root = _dist(tmp_path / "dist")
    env = {"HERMES_DISABLE_PLUGINS": "tools"}
    result = run_hermes(tmp_path, "throwaway", "--flag", "x", env=env, pythonpath=[root])
    assert 'EARLY {"args": ["--flag", "x"], "click": false, "tools": false}' in result.stderr


def test_disabled_plugin_gets_no_early_call(tmp_path: Path) -> None:
    """A plugin kept out by HERMES_DISABLE_PLUGINS or HERMES_PLUGINS is not called early."""
    root = _dist(tmp_path / "dist")
    for env in ({"HERMES_DISABLE_PLUGINS": "throwaway"}, {"HERMES_PLUGINS": "mock,sqlite"}):
        result = run_hermes(tmp_path, "throwaway", env=env, pythonpath=[root])
        assert "EARLY" not in result.stderr
        assert "plugin 'throwaway' is not loaded" in result.stderr


def test_failing_hook_does_not_stop_the_command(tmp_path: Path) -> None:
    """A hook that raises is ignored; the regular start-up runs the transport."""
    root = _dist(tmp_path / "dist", hook="early_hook:explode")
    result = run_hermes(tmp_path, "throwaway", pythonpath=[root])
    assert result.returncode == 0, result.stderr
    assert "factory started" in result.stderr


def test_built_in_names_cannot_be_taken(tmp_path: Path) -> None:
    """An early hook declared for a built-in command (``run``) is never called."""
    root = _dist(tmp_path / "dist", name="run")
    result = run_hermes(tmp_path, "run", "--help", pythonpath=[root])
    assert result.returncode == 0
    assert "EARLY" not in result.stderr


def test_a_three_argument_hook_gets_the_settings_fingerprint(tmp_path: Path) -> None:
    """A hook taking a third argument gets a fingerprint of the settings' sources and the cache dir."""
    root = _dist(tmp_path / "dist", hook="early_hook:with_context")

    def context(env: dict[str, str] | None = None) -> dict[str, str]:
        result = run_hermes(tmp_path, "throwaway", env=env, pythonpath=[root])
        line = next(x for x in result.stderr.splitlines() if x.startswith("CONTEXT "))
        found: dict[str, str] = json.loads(line.removeprefix("CONTEXT "))
        return found

    first = context()
    assert len(first["fingerprint"]) == 64 and first["cache"].endswith("hermes")
    assert context()["fingerprint"] == first["fingerprint"]  # the same sources, the same print
    assert context({"HERMES_MODEL": "mock:alt"})["fingerprint"] != first["fingerprint"]
    (tmp_path / "config.toml").write_text('model = "mock:alt"\n', encoding="utf-8")
    assert context()["fingerprint"] != first["fingerprint"]


def test_find_early_reads_the_group(tmp_path: Path) -> None:
    """Only the ``hermes.early`` section counts; other groups with the same name do not."""
    root = _dist(tmp_path / "dist")
    assert find_early("throwaway", [str(root)]) == "early_hook:begin"
    assert find_early("nothing", [str(root)]) is None
    assert find_early("throwaway", [str(tmp_path / "missing")]) is None


def test_the_early_lookup_and_the_plugin_scan_read_the_metadata_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hermes NAME`` looks for an early hook, then selects the plugins: one read of each
    distribution's ``entry_points.txt`` serves both."""
    root = _dist(tmp_path / "dist")
    monkeypatch.setattr(sys, "path", [str(root)])
    opened: list[str] = []
    real_open = builtins.open

    def recording_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", recording_open)
    assert find_early("throwaway") == "early_hook:begin"
    assert "throwaway" in installed_plugins()
    assert len([f for f in opened if f.endswith("entry_points.txt")]) == 1
