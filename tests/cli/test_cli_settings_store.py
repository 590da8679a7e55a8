"""``FileSettingsStore``: precedence, env-to-settings mapping and checked ``set`` (in-process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from hermes_cli.config_file import ConfigFileError, read_config, write_config
from hermes_cli.paths import resolve_paths
from hermes_cli.selection import select_plugins
from hermes_cli.store import FileSettingsStore
from hermes_core import CoreSettings, OptionSpec, ProviderPreset, ProviderSpec, TransportSpec
from hermes_core.errors import ConfigError, InvalidValue
from hermes_core.registry import Registry


class OpenAISettings(BaseModel):
    api_key: str | None = None
    base_url: str | None = None
    timeout_s: float = 30.0


class ApiSettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = 8642


async def _never(ctx: object) -> int:
    return 0


def _registry() -> Registry:
    registry = Registry()
    registry.providers["openai"] = ProviderSpec(
        name="openai",
        summary="OpenAI-compatible",
        factory=lambda *a, **k: None,
        settings_model=OpenAISettings,
        env_vars={"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL"},
        presets=(
            ProviderPreset(
                "openrouter", "OpenRouter", "https://x", env_vars={"api_key": "OPENROUTER_API_KEY"}
            ),
        ),
    )
    registry.transports["api"] = TransportSpec(
        name="api",
        summary="HTTP",
        factory=_never,
        options=(OptionSpec("port", "int", "port", field="port"),),
        settings_model=ApiSettings,
        config_section="api_server",
        env={"port": "API_SERVER_PORT", "host": "API_SERVER_HOST"},
    )
    return registry


def _store(tmp_path: Path, environ: dict[str, str], registry: Registry | None = None) -> FileSettingsStore:
    store = FileSettingsStore(resolve_paths({"HERMES_HOME": str(tmp_path)}), environ=environ)
    if registry is not None:
        store.bind(registry)
    return store


def test_load_layers_real_env_over_dotenv_over_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('model = "mock:alt"\n[agent]\nmax_tool_rounds = 7\n')
    store = _store(tmp_path, {})
    raw = store.load()
    assert raw["model"] == "mock:alt" and raw["model_source"] == "config"
    assert raw["data_dir"] == str(tmp_path)
    assert CoreSettings.model_validate(raw).agent.max_tool_rounds == 7

    (tmp_path / ".env").write_text('HERMES_MODEL="mock:history"\n')
    raw = store.load()
    assert (raw["model"], raw["model_source"]) == ("mock:history", "env")

    store = _store(tmp_path, {"HERMES_MODEL": "mock:echo"})
    assert store.load()["model"] == "mock:echo"
    assert store.environment()["HERMES_MODEL"] == "mock:echo"


def test_load_maps_provider_preset_custom_and_transport_variables(tmp_path: Path) -> None:
    write_config(
        tmp_path / "config.toml",
        {
            "providers": {
                "openai": {"base_url": "http://config", "timeout_s": 5.0},
                "custom": [{"name": "local", "base_url": "http://l", "api_key_env": "LOCAL_KEY"}],
            },
            "api_server": {"host": "0.0.0.0", "port": 1},
        },
    )
    (tmp_path / ".env").write_text('OPENAI_API_KEY="sk-dotenv"\nOPENROUTER_API_KEY=or-key\n')
    env = {"OPENAI_BASE_URL": "http://env", "LOCAL_KEY": "lk", "API_SERVER_PORT": "9000"}
    raw = _store(tmp_path, env, _registry()).load()
    assert raw["providers"]["openai"] == {"base_url": "http://env", "timeout_s": 5.0, "api_key": "sk-dotenv"}
    assert raw["providers"]["openrouter"] == {"api_key": "or-key"}
    assert raw["providers"]["custom"][0]["api_key"] == "lk"
    assert raw["api_server"] == {"host": "0.0.0.0", "port": "9000"}
    settings = CoreSettings.model_validate(raw)
    assert settings.providers.custom[0].api_key == "lk"
    assert settings.section("api_server")["port"] == "9000"


def test_load_reports_a_malformed_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("model = \n")
    with pytest.raises(ConfigFileError, match="line 1"):
        _store(tmp_path, {}).load()


@pytest.mark.parametrize(
    ("key", "value", "stored"),
    [
        ("model", "mock:alt", "mock:alt"),
        ("agent.max_tool_rounds", 5, 5),
        ("agent.provider_retry_max_wait_s", 3, 3.0),
        ("titles.refine", False, False),
        ("reasoning_effort", "high", "high"),
        ("storage.path", "/tmp/x.db", "/tmp/x.db"),
        ("model_aliases.fast", "mock:alt", "mock:alt"),
        ("providers.openai.base_url", "http://x", "http://x"),
        ("api_server.port", 8080, 8080),
        (
            "providers.custom",
            [{"name": "l", "base_url": "http://l"}],
            [{"name": "l", "base_url": "http://l"}],
        ),
    ],
)
def test_set_writes_checked_values(tmp_path: Path, key: str, value: object, stored: object) -> None:
    store = _store(tmp_path, {}, _registry())
    store.set(key, value)
    assert store.get(key) == stored


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("nonsense", 1, "unknown key: nonsense"),
        ("agent.nope", 1, "unknown key: agent.nope"),
        ("model_source", "x", "unknown key: model_source"),
        ("agent.max_tool_rounds", "many", "agent.max_tool_rounds: expected an integer ≥ 1"),
        ("agent.max_tool_rounds", 0, "expected an integer ≥ 1"),
        ("agent.max_tool_rounds", True, "expected an integer"),
        ("titles.refine", "maybe", "titles.refine: expected true or false"),
        ("reasoning_effort", "extreme", "expected one of none, minimal, low, medium, high, xhigh"),
        ("providers.nobody.api_key", "k", "no provider 'nobody'"),
        ("providers.openai.timeout_s", "slow", "providers.openai.timeout_s: expected a number"),
        ("api_server.port", "http", "api_server.port: expected an integer"),
        ("api_server.bogus", 1, "unknown key: api_server.bogus"),
    ],
)
def test_set_rejects_and_writes_nothing(tmp_path: Path, key: str, value: object, message: str) -> None:
    (tmp_path / "config.toml").write_text('model = "mock:echo"\n')
    store = _store(tmp_path, {}, _registry())
    with pytest.raises(ConfigError, match=message):
        store.set(key, value)
    assert (tmp_path / "config.toml").read_text() == 'model = "mock:echo"\n'


def test_set_none_removes_and_set_env_rejects_newlines(tmp_path: Path) -> None:
    store = _store(tmp_path, {})
    store.set("model", "mock:alt")
    store.set("model", None)
    assert read_config(tmp_path / "config.toml") == {}
    with pytest.raises(InvalidValue):
        store.set_env("TOKEN", "a\nb")
    assert not (tmp_path / ".env").exists()
    store.set_env("TOKEN", "secret value")
    assert store.environment()["TOKEN"] == "secret value"


def test_selection_rules() -> None:
    installed = ["a", "b", "c"]
    assert select_plugins({}, installed).entry_points is True
    assert select_plugins({"HERMES_PLUGINS": ""}, installed).entry_points == []
    assert select_plugins({"HERMES_PLUGINS": "b, a"}, installed).entry_points == ["b", "a"]
    picked = select_plugins({"HERMES_PLUGINS": "a,b", "HERMES_DISABLE_PLUGINS": "b"}, installed)
    assert picked.entry_points == ["a"]
    assert select_plugins({"HERMES_PLUGINS": "a"}, installed, allow_flags=["c"]).entry_points == ["c"]
    assert select_plugins({}, installed, deny_flags=["c"]).entry_points == ["a", "b"]
    unknown = select_plugins({"HERMES_PLUGINS": "a,zz", "HERMES_DISABLE_PLUGINS": "yy"}, installed)
    assert unknown.entry_points == ["a"]
    assert any("'zz'" in w for w in unknown.warnings) and any("'yy'" in w for w in unknown.warnings)
    for value in ("1", "true", "YES", "True"):
        assert select_plugins({"HERMES_STRICT_PLUGINS": value}, installed).strict is True
    lenient = select_plugins({"HERMES_STRICT_PLUGINS": "on"}, installed)
    assert lenient.strict is False and "HERMES_STRICT_PLUGINS" in lenient.warnings[0]
