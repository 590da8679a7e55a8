"""The storage backend's own environment variable (``HERMES_POSTGRES_DSN``) is layered over
``[storage]`` by the CLI, only when that backend is the chosen one."""

from __future__ import annotations

from pathlib import Path

from hermes_cli.settings_loader import core_mapping
from hermes_core import Registry
from hermes_core.settings import CoreSettings
from hermes_postgres.plugin import hermes_storage_backends


def registry() -> Registry:
    reg = Registry()
    spec = hermes_storage_backends()
    reg.storage[spec.name] = spec
    return reg


def test_the_environment_names_the_server_over_config_toml(tmp_path: Path) -> None:
    config = {"storage": {"backend": "postgres", "dsn": "postgresql://from-config/db", "pool_size": 3}}
    env = {"HERMES_POSTGRES_DSN": "postgresql://from-env/db"}

    raw = core_mapping(config, env, registry(), tmp_path)

    settings = CoreSettings.model_validate(raw)
    assert settings.storage.dsn == "postgresql://from-env/db" and settings.storage.pool_size == 3
    assert config["storage"]["dsn"] == "postgresql://from-config/db"  # the file's mapping is untouched
    assert CoreSettings.model_validate(core_mapping(config, {}, registry(), tmp_path)).storage.dsn == (
        "postgresql://from-config/db"
    )


def test_the_variable_is_ignored_for_other_backends(tmp_path: Path) -> None:
    env = {"HERMES_POSTGRES_DSN": "postgresql://from-env/db"}
    for config in ({}, {"storage": {"backend": "sqlite"}}):
        settings = CoreSettings.model_validate(core_mapping(config, env, registry(), tmp_path))
        assert settings.storage.dsn is None
