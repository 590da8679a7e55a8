"""The run bus's own environment variable (``HERMES_REDIS_URL``) is layered over ``[bus]`` by the
CLI, only when that bus is the chosen one; the default bus is in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_cli.settings_loader import core_mapping
from hermes_core import ConfigError, Registry
from hermes_core.settings import CoreSettings
from hermes_redis.plugin import hermes_run_buses, make_bus


def registry() -> Registry:
    reg = Registry()
    spec = hermes_run_buses()
    reg.buses[spec.name] = spec
    return reg


def test_the_default_bus_is_in_process(tmp_path: Path) -> None:
    settings = CoreSettings.model_validate(
        core_mapping({}, {"HERMES_REDIS_URL": "redis://x"}, registry(), tmp_path)
    )
    assert settings.bus.backend == "memory" and settings.bus.url is None and settings.bus.heartbeat_s == 1.0


def test_the_environment_names_the_server_over_config_toml(tmp_path: Path) -> None:
    config = {"bus": {"backend": "redis", "url": "redis://from-config:6379/0", "heartbeat_s": 2}}
    env = {"HERMES_REDIS_URL": "redis://from-env:6379/1"}

    settings = CoreSettings.model_validate(core_mapping(config, env, registry(), tmp_path))

    assert settings.bus.url == "redis://from-env:6379/1" and settings.bus.heartbeat_s == 2
    assert config["bus"]["url"] == "redis://from-config:6379/0"  # the file's mapping is untouched
    plain = CoreSettings.model_validate(core_mapping(config, {"HERMES_REDIS_URL": ""}, registry(), tmp_path))
    assert plain.bus.url == "redis://from-config:6379/0"  # an empty variable counts as unset


def test_a_bus_without_a_server_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"set HERMES_REDIS_URL or bus\.url"):
        make_bus(url=None, instance_id="i", heartbeat_s=1.0)


def test_a_bad_heartbeat_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="heartbeat_s"):
        CoreSettings.model_validate(core_mapping({"bus": {"heartbeat_s": 0}}, {}, registry(), tmp_path))


def test_the_owner_grace_period_spans_at_least_three_heartbeats(tmp_path: Path) -> None:
    def bus(section: dict[str, float]) -> Any:
        return CoreSettings.model_validate(core_mapping({"bus": section}, {}, registry(), tmp_path)).bus

    assert bus({}).owner_grace_s == 30.0  # like a session's writer lease
    assert bus({"heartbeat_s": 0.5, "owner_grace_s": 3}).owner_grace_s == 3.0
    assert bus({"heartbeat_s": 20}).owner_grace_s == 60.0  # a slow heartbeat stretches the default
    with pytest.raises(ValueError, match="owner_grace_s must be at least three times"):
        bus({"heartbeat_s": 1, "owner_grace_s": 2})
