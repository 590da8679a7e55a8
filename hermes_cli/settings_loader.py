"""Build the raw settings mappings from ``config.toml``, the environment and flags.

Precedence, highest first: flags, environment (real, then ``.env``), ``config.toml``, defaults.
The core mapping is validated by the kernel (:class:`hermes_core.CoreSettings`); a transport's
section is validated here against its ``settings_model``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core.errors import ConfigError

if TYPE_CHECKING:
    from hermes_core.records import TransportSpec
    from hermes_core.registry import Registry


def _env_value(env: Mapping[str, str], name: str) -> str | None:
    """Return a variable's value; an empty one counts as unset."""
    value = env.get(name)
    return value if value else None


def _table(parent: dict[str, Any], name: str) -> dict[str, Any] | None:
    """Return ``parent[name]`` as a table, creating it; None if it holds something else."""
    node = parent.setdefault(name, {})
    return node if isinstance(node, dict) else None


def _apply_provider_env(raw: dict[str, Any], env: Mapping[str, str], registry: Registry) -> None:
    for spec in registry.providers.values():
        sources = [(spec.name, spec.env_vars)] + [(p.name, p.env_vars) for p in spec.presets]
        for name, env_vars in sources:
            for field, var in env_vars.items():
                value = _env_value(env, var)
                if value is None:
                    continue
                providers = _table(raw, "providers")
                table = _table(providers, name) if providers is not None else None
                if table is not None:
                    table[field] = value
    _apply_custom_keys(raw.get("providers"), env)


def _apply_custom_keys(providers: Any, env: Mapping[str, str]) -> None:
    """Fill each ``[[providers.custom]]`` entry's ``api_key`` from its ``api_key_env``."""
    if not isinstance(providers, dict):
        return
    entries = providers.get("custom")
    if not isinstance(entries, list):
        return
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("api_key_env"), str):
            value = _env_value(env, entry["api_key_env"])
            if value is not None:
                entry["api_key"] = value


def _apply_transport_env(raw: dict[str, Any], env: Mapping[str, str], registry: Registry) -> None:
    for spec in registry.transports.values():
        if not spec.config_section:
            continue
        for field, var in spec.env.items():
            value = _env_value(env, var)
            if value is None:
                continue
            table = _table(raw, spec.config_section)
            if table is not None:
                table[field] = value


def _apply_storage_env(raw: dict[str, Any], env: Mapping[str, str], registry: Registry) -> None:
    """Layer the chosen storage backend's variables (e.g. ``HERMES_POSTGRES_DSN``) over ``[storage]``."""
    section = raw.get("storage")
    backend = section.get("backend") if isinstance(section, dict) else None
    spec = registry.storage.get(backend) if isinstance(backend, str) else None
    if spec is None:
        return
    for field, var in spec.env.items():
        value = _env_value(env, var)
        if value is not None:
            table = _table(raw, "storage")
            if table is not None:
                table[field] = value


def _apply_bus_env(raw: dict[str, Any], env: Mapping[str, str], registry: Registry) -> None:
    """Layer the chosen run bus's variables (e.g. ``HERMES_REDIS_URL``) over ``[bus]``."""
    section = raw.get("bus")
    backend = section.get("backend") if isinstance(section, dict) else None
    spec = registry.buses.get(backend) if isinstance(backend, str) else None
    if spec is None:
        return
    for field, var in spec.env.items():
        value = _env_value(env, var)
        if value is not None:
            table = _table(raw, "bus")
            if table is not None:
                table[field] = value


def _apply_tracer_env(raw: dict[str, Any], env: Mapping[str, str], registry: Registry) -> None:
    """Layer each tracer's variables (the standard ``OTEL_*`` ones) over its config table."""
    for spec in registry.tracers.values():
        if not spec.config_section:
            continue
        for field, var in spec.env.items():
            value = _env_value(env, var)
            if value is not None:
                table = _table(raw, spec.config_section)
                if table is not None:
                    table[field] = value


def core_mapping(
    config: Mapping[str, Any], env: Mapping[str, str], registry: Registry | None, data_dir: Path
) -> dict[str, Any]:
    """Layer the environment over ``config.toml`` into the raw mapping for ``CoreSettings``.

    :param config: the parsed ``config.toml``.
    :param env: the real environment over ``.env``.
    :param registry: the loaded plugins (for provider and transport variables), if known.
    :param data_dir: where data lives; becomes ``data_dir``.
    :returns: a new mapping; ``config`` is not modified.
    """
    raw: dict[str, Any] = copy.deepcopy(dict(config))
    if raw.get("model") is not None:
        raw["model_source"] = "config"
    model = _env_value(env, "HERMES_MODEL")
    if model is not None:
        raw["model"] = model
        raw["model_source"] = "env"
    record_dir = _env_value(env, "HERMES_RECORD_DIR")
    if record_dir is not None:
        raw["record_dir"] = record_dir
    if registry is not None:
        _apply_provider_env(raw, env, registry)
        _apply_transport_env(raw, env, registry)
        _apply_storage_env(raw, env, registry)
        _apply_bus_env(raw, env, registry)
        _apply_tracer_env(raw, env, registry)
    else:
        _apply_custom_keys(raw.get("providers"), env)
    raw["data_dir"] = str(data_dir)
    return raw


def apply_model_flag(raw: dict[str, Any], model: str | None) -> dict[str, Any]:
    """Let a ``--model`` flag win over everything else.

    :returns: ``raw``, changed in place.
    """
    if model:
        raw["model"] = model
        raw["model_source"] = "flag"
    return raw


def transport_raw(
    spec: TransportSpec, core_raw: Mapping[str, Any], env: Mapping[str, str], flags: Mapping[str, Any]
) -> dict[str, Any]:
    """Return a transport's unvalidated settings: its section, then env, then flags.

    :param core_raw: the mapping from :func:`core_mapping` (its section already has env applied).
    :param flags: field → value for the flags given on the command line.
    """
    section = core_raw.get(spec.config_section) if spec.config_section else None
    if section is not None and not isinstance(section, dict):
        raise ConfigError(f"[{spec.config_section}] in config.toml must be a table")
    raw: dict[str, Any] = copy.deepcopy(section) if section else {}
    if not spec.config_section:
        # Without a section the env variables were not layered by core_mapping.
        for field, var in spec.env.items():
            value = _env_value(env, var)
            if value is not None:
                raw[field] = value
    raw.update(flags)
    return raw


def validation_errors(exc: BaseException) -> list[dict[str, Any]]:
    """Return the error entries of a pydantic ``ValidationError`` (empty for other errors).

    Pydantic's error is a ``ValueError``; reading it by attribute keeps pydantic out of the CLI.
    """
    errors = getattr(exc, "errors", None)
    found = errors() if callable(errors) else []
    return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []


def validate_transport_settings(spec: TransportSpec, raw: Mapping[str, Any]) -> Any:
    """Validate a transport's settings against its ``settings_model``.

    :returns: the model instance, or a plain dict when the transport has no model.
    :raises ConfigError: naming the section and the bad fields.
    """
    from hermes_core.refs import load_ref

    try:
        model = load_ref(spec.settings_model)
    except ImportError as exc:
        raise ConfigError(f"cannot load the settings model of transport {spec.name}: {exc}") from exc
    if model is None:
        return dict(raw)
    try:
        return model.model_validate(dict(raw))
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        where = f"[{spec.config_section}]" if spec.config_section else f"transport {spec.name}"
        errors = validation_errors(exc)
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err.get('loc', ())) or '(section)'}: {err.get('msg', '')}"
            for err in errors
        )
        raise ConfigError(f"invalid {where} settings: {problems or exc}") from exc
