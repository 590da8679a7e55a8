"""``hermes plugins`` and plugin selection: allow/deny lists, flags, strict mode, failures."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_helpers import Hermes

FIRST_PARTY = ("mock", "sqlite", "tools", "openai", "anthropic", "slash", "model-switch")


def _rows(stdout: str) -> dict[str, str]:
    lines = stdout.strip().splitlines()
    assert lines[0].split()[:2] == ["NAME", "VERSION"]
    return {line.split()[0]: line for line in lines[1:]}


def test_plugins_lists_first_party_with_distribution_and_hooks(hermes: Hermes) -> None:
    result = hermes("plugins")
    assert result.returncode == 0, result.stderr
    rows = _rows(result.stdout)
    for name in FIRST_PARTY:
        assert name in rows and "hermes-kernel" in rows[name]
    assert "model_providers" in rows["mock"] and rows["mock"].endswith("ok")
    assert "storage_backends" in rows["sqlite"]


def test_broken_plugin_is_listed_failed_and_strict_mode_fails(hermes: Hermes, broken: Path) -> None:
    result = hermes("plugins", pythonpath=[broken])
    assert result.returncode == 1, result.stderr  # the table, then a non-zero exit
    row = _rows(result.stdout)["broken"]
    assert "brokenplug" in row and "FAILED" in row and "broken on purpose" in row
    assert _rows(result.stdout)["mock"].endswith("ok")

    for value in ("1", "TRUE", "yes"):
        strict = hermes("plugins", pythonpath=[broken], env={"HERMES_STRICT_PLUGINS": value})
        assert strict.returncode == 1, strict.stdout
        assert "broken" in strict.stderr and "broken on purpose" in strict.stderr
        assert "Traceback" not in strict.stderr

    odd = hermes("plugins", pythonpath=[broken], env={"HERMES_STRICT_PLUGINS": "sure"})
    assert odd.returncode == 1 and "HERMES_STRICT_PLUGINS" in odd.stderr


def test_disable_list_and_flags_hide_a_plugin(hermes: Hermes, throwaway: Path) -> None:
    shown = hermes("plugins", pythonpath=[throwaway])
    assert "throwaway" in _rows(shown.stdout)
    hidden = hermes("plugins", pythonpath=[throwaway], env={"HERMES_DISABLE_PLUGINS": "throwaway"})
    assert "throwaway" not in _rows(hidden.stdout)
    flagged = hermes("--no-plugin", "throwaway", "plugins", pythonpath=[throwaway])
    assert "throwaway" not in _rows(flagged.stdout)
    gone = hermes("throwaway", pythonpath=[throwaway], env={"HERMES_DISABLE_PLUGINS": "throwaway"})
    assert gone.returncode == 2 and "plugin 'throwaway' is not loaded" in gone.stderr


def test_allowlist_env_and_flags(hermes: Hermes) -> None:
    none = hermes("plugins", env={"HERMES_PLUGINS": ""})
    assert none.returncode == 0 and none.stdout.strip() == "no plugins loaded"
    some = hermes("plugins", env={"HERMES_PLUGINS": "mock,sqlite,nosuch"})
    assert set(_rows(some.stdout)) == {"mock", "sqlite"}
    assert "nosuch" in some.stderr
    after = hermes("plugins", env={"HERMES_PLUGINS": "mock,sqlite", "HERMES_DISABLE_PLUGINS": "sqlite"})
    assert set(_rows(after.stdout)) == {"mock"}
    flags = hermes("--plugin", "tools", "--plugin", "mock", "plugins", env={"HERMES_PLUGINS": "sqlite"})
    assert set(_rows(flags.stdout)) == {"tools", "mock"}


def test_only_selected_plugins_answer_a_run(hermes: Hermes) -> None:
    result = hermes("run", "hi", env={"HERMES_PLUGINS": "mock,sqlite"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "You said: hi\n"
    nothing = hermes("run", "hi", env={"HERMES_PLUGINS": "sqlite"})
    assert nothing.returncode != 0 and "no model provider configured" in nothing.stderr
    no_storage = hermes("run", "hi", env={"HERMES_PLUGINS": ""})
    assert no_storage.returncode == 2 and "unknown storage backend 'sqlite'" in no_storage.stderr


def test_transport_named_like_a_builtin_is_recorded_failed(hermes: Hermes, reserved: Path) -> None:
    result = hermes("plugins", pythonpath=[reserved])
    assert result.returncode == 1, result.stderr
    row = _rows(result.stdout)["reserved"]
    assert "FAILED" in row and "'run'" in row and "reserved" in row
    run = hermes("run", "still works", pythonpath=[reserved])
    assert run.stdout == "You said: still works\n"
