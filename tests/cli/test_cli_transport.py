"""``hermes <transport>``: options from ``OptionSpec``, settings precedence, start order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.cli_helpers import Hermes


def _report(stderr: str) -> dict[str, Any]:
    for line in stderr.splitlines():
        if line.startswith("REPORT "):
            report: dict[str, Any] = json.loads(line[len("REPORT ") :])
            return report
    raise AssertionError(f"no report in stderr:\n{stderr}")


def test_factory_gets_flag_and_setting_and_ready_resolves_after_start(
    hermes: Hermes, throwaway: Path
) -> None:
    result = hermes("throwaway", "--flag", "x", pythonpath=[throwaway])
    assert result.returncode == 0, result.stderr
    report = _report(result.stderr)
    assert report["options"]["flag"] == "x"
    assert report["options"]["colour"] == "red" and report["options"]["loud"] is False
    assert report["settings"] == {"greeting": "hello", "port": 0}
    assert report["settings_type"] == "Settings" and report["store"] == "FileSettingsStore"
    assert report["ready_at_start"] is False
    assert result.stderr.index("factory started") < result.stderr.index("REPORT ")
    assert report["registry_has_me"] is True


def test_settings_precedence_flag_env_config_default(hermes: Hermes, home: Path, throwaway: Path) -> None:
    def greeting(*args: str, **env: str) -> str:
        result = hermes("throwaway", *args, pythonpath=[throwaway], env=env)
        assert result.returncode == 0, result.stderr
        return str(_report(result.stderr)["settings"]["greeting"])

    assert greeting() == "hello"
    (home / "config.toml").write_text('[throwaway]\ngreeting = "from config"\nport = 5\n')
    assert greeting() == "from config"
    (home / ".env").write_text('THROWAWAY_GREETING="from dotenv"\n')
    assert greeting() == "from dotenv"
    assert greeting(THROWAWAY_GREETING="from env") == "from env"
    assert greeting("--greeting", "from flag", THROWAWAY_GREETING="from env") == "from flag"


def test_exclusive_group_is_a_usage_error(hermes: Hermes, throwaway: Path) -> None:
    result = hermes("throwaway", "--loud", "--quiet", pythonpath=[throwaway])
    assert result.returncode == 2
    assert "--loud and --quiet cannot be used together" in result.stderr
    assert "REPORT" not in result.stderr
    one = hermes("throwaway", "--loud", pythonpath=[throwaway])
    assert one.returncode == 0 and _report(one.stderr)["options"]["loud"] is True


def test_help_shows_the_transport_options(hermes: Hermes, throwaway: Path) -> None:
    result = hermes("throwaway", "--help", pythonpath=[throwaway])
    assert result.returncode == 0
    for flag in ("--flag", "--greeting", "--loud", "--quiet", "--exit-code", "--colour [red|green]"):
        assert flag in result.stdout
    bad = hermes("throwaway", "--colour", "blue", pythonpath=[throwaway])
    assert bad.returncode == 2 and "blue" in bad.stderr


def test_factory_return_value_is_the_exit_code(hermes: Hermes, throwaway: Path) -> None:
    assert hermes("throwaway", "--exit-code", "3", pythonpath=[throwaway]).returncode == 3


def test_reload_settings_rereads_the_files(hermes: Hermes, home: Path, throwaway: Path) -> None:
    result = hermes("throwaway", "--reload", pythonpath=[throwaway])
    assert result.returncode == 0, result.stderr
    assert _report(result.stderr)["reloaded"] == {"greeting": "reloaded", "port": 0}
    assert 'greeting = "reloaded"' in (home / "config.toml").read_text()


def test_startup_errors_reach_ctx_ready(hermes: Hermes, home: Path, throwaway: Path) -> None:
    (home / "config.toml").write_text("[throwaway]\nport = 'many'\n")
    result = hermes("throwaway", pythonpath=[throwaway])
    assert result.returncode == 2
    assert "factory started" in result.stderr  # the factory ran before start-up failed
    assert "invalid [throwaway] settings: port" in result.stderr and "Traceback" not in result.stderr

    (home / "config.toml").write_text("[throwaway\n")
    broken = hermes("throwaway", pythonpath=[throwaway])
    assert broken.returncode == 2 and f"{home / 'config.toml'}, line 1" in broken.stderr


def test_config_set_checks_transport_keys(hermes: Hermes, home: Path, throwaway: Path) -> None:
    bad = hermes("config", "set", "throwaway.port", "eighty", pythonpath=[throwaway])
    assert bad.returncode == 2 and "throwaway.port: expected an integer" in bad.stderr
    unknown = hermes("config", "set", "throwaway.nope", "1", pythonpath=[throwaway])
    assert unknown.returncode == 2 and "unknown key: throwaway.nope" in unknown.stderr
    assert not (home / "config.toml").exists()
    good = hermes("config", "set", "throwaway.port", "8080", pythonpath=[throwaway])
    assert good.returncode == 0, good.stderr
    assert "port = 8080" in (home / "config.toml").read_text()


def test_plugin_without_transport_is_usage_error(hermes: Hermes, no_transport: Path, throwaway: Path) -> None:
    result = hermes("plain", pythonpath=[no_transport, throwaway])
    assert result.returncode == 2
    assert "plugin 'plain' provides no transport" in result.stderr and "throwaway" in result.stderr
    first_party = hermes("sqlite", pythonpath=[throwaway])
    assert first_party.returncode == 2 and "provides no transport" in first_party.stderr
