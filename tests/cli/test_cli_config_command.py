"""``hermes config path|get|set`` and how settings files reach ``hermes run``."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.cli.cli_helpers import Hermes


def test_config_path_shows_config_and_env_inside_hermes_home(hermes: Hermes, home: Path) -> None:
    result = hermes("config", "path")
    assert result.returncode == 0
    assert result.stdout == f"config.toml: {home / 'config.toml'}\n.env:        {home / '.env'}\n"
    assert hermes("config", "path", "--config").stdout == f"{home / 'config.toml'}\n"
    assert hermes("config", "path", "--env").stdout == f"{home / '.env'}\n"


def test_config_set_then_get_each_type(hermes: Hermes, home: Path) -> None:
    for key, value, shown in [
        ("model", "mock:alt", "mock:alt"),
        ("agent.max_tool_rounds", "7", "7"),
        ("agent.provider_retry_max_wait_s", "2.5", "2.5"),
        ("titles.refine", "false", "false"),
        ("reasoning_effort", "low", "low"),
        ("model_aliases.quick", "mock:history", "mock:history"),
    ]:
        result = hermes("config", "set", key, value)
        assert result.returncode == 0, result.stderr
        got = hermes("config", "get", key)
        assert (got.returncode, got.stdout.strip()) == (0, shown)
    text = (home / "config.toml").read_text()
    assert 'model = "mock:alt"' in text and "max_tool_rounds = 7" in text and "refine = false" in text
    assert stat.S_IMODE((home / "config.toml").stat().st_mode) == 0o600


def test_config_get_unset_key_shows_default_or_fails(hermes: Hermes) -> None:
    assert hermes("config", "get", "agent.max_tool_rounds").stdout.strip() == "60"
    result = hermes("config", "get", "model")
    assert result.returncode == 1 and "model is not set" in result.stderr


def test_config_set_unknown_key_or_bad_value_exits_2_and_writes_nothing(hermes: Hermes, home: Path) -> None:
    for args, message in [
        (("nonsense", "1"), "unknown key: nonsense"),
        (
            ("agent.max_tool_rounds", "lots"),
            "invalid value for agent.max_tool_rounds: expected an integer ≥ 1",
        ),
        (("agent.max_tool_rounds", "0"), "expected an integer ≥ 1"),
        (("titles.refine", "yes"), "invalid value for titles.refine: expected true or false"),
        (("reasoning_effort", "max"), "expected one of none, minimal, low, medium, high, xhigh"),
    ]:
        result = hermes("config", "set", *args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert not (home / "config.toml").exists()


def test_malformed_config_is_one_line_naming_the_line(hermes: Hermes, home: Path) -> None:
    (home / "config.toml").write_text('model = "mock:echo"\n[agent\nmax_tool_rounds = 3\n')
    for args in (("config", "get", "model"), ("config", "set", "model", "mock:alt"), ("run", "hi")):
        result = hermes(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert f"{home / 'config.toml'}, line 2" in result.stderr
        assert "Traceback" not in result.stderr
    assert (home / "config.toml").read_text().startswith('model = "mock:echo"\n[agent\n')


def test_model_precedence_flag_env_dotenv_config(hermes: Hermes, home: Path) -> None:
    assert hermes("run", "hi").stdout == "You said: hi\n"  # the fallback model
    (home / "config.toml").write_text('model = "mock:alt"\n')
    assert hermes("run", "hi").stdout == "alt: You said: hi\n"
    (home / ".env").write_text('HERMES_MODEL="mock:echo"\n')
    assert hermes("run", "hi").stdout == "You said: hi\n"  # .env beats config.toml
    real = hermes("run", "hi", env={"HERMES_MODEL": "mock:alt"})
    assert real.stdout == "alt: You said: hi\n"  # the real environment beats .env
    flag = hermes("run", "--model", "mock:history", "hi", env={"HERMES_MODEL": "mock:alt"})
    assert flag.stdout == "Turns: hi\n"  # the flag beats everything


def test_unknown_model_is_a_clear_startup_error(hermes: Hermes, home: Path) -> None:
    (home / "config.toml").write_text('model = "mock:ech"\n')
    result = hermes("run", "hi")
    assert result.returncode != 0
    assert "mock:ech" in result.stderr and "Traceback" not in result.stderr
    assert "mock:echo" in result.stderr  # the near match is offered
    assert result.stdout == ""
    flag = hermes("run", "--model", "nosuchprovider:thing", "hi")
    assert flag.returncode != 0 and "nosuchprovider:thing" in flag.stderr


def test_config_set_model_checks_the_reference(hermes: Hermes, home: Path) -> None:
    """An unknown provider or model exits 2 and writes nothing; a good one is stored. No database."""
    ok = hermes("config", "set", "model", "mock:alt")
    assert ok.returncode == 0, ok.stderr
    before = (home / "config.toml").read_bytes()
    for bad in ("bogus:x", "no-such-model"):
        done = hermes("config", "set", "model", bad)
        assert done.returncode == 2, done.stderr
        assert f"unknown model: {bad}" in done.stderr
        assert (home / "config.toml").read_bytes() == before
    assert hermes("config", "set", "model", "ollama:qwen3:8b").returncode == 0
    assert 'model = "ollama:qwen3:8b"' in (home / "config.toml").read_text()
    assert not list(home.glob("*.sqlite3*"))


def test_config_set_model_sees_the_key_in_the_environment_and_dotenv(hermes: Hermes, home: Path) -> None:
    """Setting a model whose key is already set (environment or .env) warns about nothing; a
    model whose key is missing is warned about, naming the variable."""
    key = {"OPENAI_API_KEY": "sk-test-0123456789abcdef"}
    with_env = hermes("config", "set", "model", "openai:gpt-4o", env=key)
    assert with_env.returncode == 0, with_env.stderr
    assert "no API key" not in with_env.stderr, with_env.stderr
    (home / ".env").write_text("ANTHROPIC_API_KEY=sk-ant-test-0123456789\n")
    with_dotenv = hermes("config", "set", "model", "anthropic:claude-sonnet-4-5")
    assert with_dotenv.returncode == 0, with_dotenv.stderr
    assert "no API key" not in with_dotenv.stderr, with_dotenv.stderr
    missing = hermes("config", "set", "model", "openai:gpt-4o")
    assert missing.returncode == 0, missing.stderr
    assert "OPENAI_API_KEY" in missing.stderr
    assert 'model = "openai:gpt-4o"' in (home / "config.toml").read_text()
