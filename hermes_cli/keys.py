"""Dotted ``config.toml`` keys: which exist, what type they take, and how to check a value.

Keys are checked against :class:`hermes_core.CoreSettings`; ``providers.<name>.<field>`` against
that provider's settings model and ``[<section>].<field>`` against the transport or the plugin
(``hermes_config_sections``) that owns the section (all need the plugin registry; without it those
keys are accepted as free-form values).
"""

from __future__ import annotations

import tomllib
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.errors import ConfigError

if TYPE_CHECKING:
    from hermes_core.registry import Registry

# Sections the documented transports own; free-form when their plugin is not loaded.
KNOWN_SECTIONS = frozenset({"acp", "tui", "api_server", "display"})
# CoreSettings fields that hermes_cli fills itself; they never come from config.toml.
NOT_CONFIG_KEYS = frozenset({"model_source", "data_dir"})


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """What one dotted key accepts.

    Values are checked by validating them through the pydantic model that owns the key
    (``owner``), so this module never imports pydantic itself.

    :param annotation: the field's type, or None for a free-form value.
    :param expected: a human description of the type ("an integer ≥ 1").
    :param default: the default when the key is unset (None when there is none).
    :param owner: the model class holding the key; None when no model is known.
    :param field: the owner's field the key names; None when the key is the whole owner.
    :param dict_key: for a key inside a ``dict[str, X]`` field, the entry's name.
    """

    key: str
    annotation: Any
    metadata: tuple[Any, ...]
    expected: str
    default: Any = None
    owner: Any = None
    field: str | None = None
    dict_key: str | None = None

    @property
    def free_form(self) -> bool:
        """Return whether any TOML value is accepted."""
        return self.annotation is None

    def _invalid(self, errors: list[dict[str, Any]] | None = None) -> ConfigError:
        detail = ""
        for error in errors or ():
            # Point inside a table or list value: "storage: expected a table (backend: …)".
            loc = [str(p) for p in error.get("loc", ())][0 if self.field is None else 1 :]
            if self.dict_key is not None:
                loc = loc[1:]
            if loc:
                detail = f" ({'.'.join(loc)}: {error.get('msg', 'invalid')})"
                break
        return ConfigError(f"invalid value for {self.key}: expected {self.expected}{detail}")

    def validate(self, value: Any) -> Any:
        """Check ``value`` and return it in the form ``config.toml`` stores.

        :raises ConfigError: naming the key and the expected type.
        """
        if value is None or self.free_form:
            return value
        if isinstance(value, bool) and not _accepts(self.annotation, bool):
            raise self._invalid()
        if self.owner is None:
            if typing.get_origin(self.annotation) is dict and not isinstance(value, dict):
                raise self._invalid()
            return _tomlable(value)
        if self.field is None:
            payload = value
        else:
            payload = {self.field: value if self.dict_key is None else {self.dict_key: value}}
        if not isinstance(payload, dict):
            raise self._invalid()
        try:
            instance = self.owner.model_validate(payload)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            from hermes_cli.settings_loader import validation_errors

            errors = validation_errors(exc)
            ours = [e for e in errors if tuple(e.get("loc", ()))[:1] == (self.field,)]
            if self.field is None or not errors or ours:
                raise self._invalid(ours or errors) from exc
            # Only other required fields of the owner were missing: this value itself is fine.
            return _tomlable(value)
        if self.field is None:
            return _tomlable(instance.model_dump(mode="json", exclude_unset=True))
        dumped = instance.model_dump(mode="json", include={self.field})[self.field]
        return _tomlable(dumped if self.dict_key is None else dumped[self.dict_key])

    def parse_text(self, text: str) -> Any:
        """Turn a command-line string into a value of this key's type.

        String-like keys take the text as it is; other types read it as a TOML value
        (``5``, ``2.5``, ``true``, ``["a", "b"]``, ``{a = "b"}``). A free-form key tries TOML
        and falls back to the plain string.

        :raises ConfigError: the text is not a value of the expected type.
        """
        if not self.free_form and _accepts(self.annotation, str):
            return text
        try:
            return tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            if self.free_form:
                return text
            raise ConfigError(f"invalid value for {self.key}: expected {self.expected}") from None


def _tomlable(value: Any) -> Any:
    """Drop None entries from tables and lists: TOML has no null."""
    if isinstance(value, dict):
        return {k: _tomlable(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_tomlable(v) for v in value if v is not None]
    return value


def _union_args(annotation: Any) -> tuple[Any, ...]:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(annotation)
    return (annotation,)


def _accepts(annotation: Any, kind: type) -> bool:
    """Return whether ``annotation`` takes plain values of ``kind`` (str also covers paths, enums)."""
    for arg in _union_args(annotation):
        if arg is kind:
            return True
        if kind is str and (arg is Path or (isinstance(arg, type) and issubclass(arg, Path))):
            return True
        if kind is str and typing.get_origin(arg) is Literal:
            return all(isinstance(v, str) for v in typing.get_args(arg))
    return False


def describe(annotation: Any, metadata: tuple[Any, ...] = ()) -> str:
    """Return a short human description of a type with its numeric bounds.

    :param annotation: a type annotation.
    :param metadata: pydantic constraint objects (``Ge``, ``Gt``, ``Le``, ``Lt``, ``MinLen``).
    """
    args = [a for a in _union_args(annotation) if a is not type(None)]
    if len(args) > 1:
        text = " or ".join(describe(a) for a in args)
    else:
        text = _describe_one(args[0] if args else annotation)
    bounds = []
    for item in metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            bound = getattr(item, attr, None)
            if bound is not None:
                bounds.append(f"{sign} {bound}")
        if getattr(item, "min_length", None):
            bounds.append("not empty")
    if bounds:
        text = f"{text} {' and '.join(bounds)}"
    return text


def _describe_one(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(str(v) for v in typing.get_args(tp))
    if tp is bool:
        return "true or false"
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if tp is Path or (isinstance(tp, type) and issubclass(tp, Path)):
        return "a path"
    if origin is dict or tp is dict:
        return "a table"
    if origin is list or tp is list or origin is tuple:
        return "a list"
    if isinstance(tp, type) and hasattr(tp, "model_fields"):
        return "a table"
    return getattr(tp, "__name__", str(tp))


def _model_fields(model: Any) -> dict[str, Any] | None:
    fields = getattr(model, "model_fields", None)
    return dict(fields) if isinstance(fields, dict) else None


def _leaf(key: str, model: Any, name: str, field: Any) -> KeyInfo:
    metadata = tuple(getattr(field, "metadata", ()) or ())
    default = field.get_default(call_default_factory=True) if hasattr(field, "get_default") else None
    expected = describe(field.annotation, metadata)
    return KeyInfo(key, field.annotation, metadata, expected, _tomlable_default(default), model, name)


def _table(key: str, model: Any) -> KeyInfo:
    """Describe a key naming a whole section, checked against its model when there is one."""
    return KeyInfo(key, dict[str, Any], (), "a table", None, model)


def _tomlable_default(default: Any) -> Any:
    if default is None or isinstance(default, str | int | float | bool | list | dict):
        return default
    dump = getattr(default, "model_dump", None)
    if callable(dump):
        return _tomlable(dump(mode="json"))
    return str(default)


def _walk_model(key: str, model: Any, parts: list[str]) -> KeyInfo:
    """Descend through a pydantic model (and its nested models and str-keyed dicts)."""
    fields = _model_fields(model)
    if fields is None:
        raise ConfigError(f"unknown key: {key}")
    name, rest = parts[0], parts[1:]
    field = fields.get(name)
    if field is None:
        known = ", ".join(sorted(fields))
        raise ConfigError(f"unknown key: {key} ({_did_you_mean(key, name, fields)}known here: {known})")
    if not rest:
        return _leaf(key, model, name, field)
    annotation = field.annotation
    for arg in _union_args(annotation):
        if _model_fields(arg) is not None:
            return _walk_model(key, arg, rest)
        if typing.get_origin(arg) is dict and len(rest) > 1:
            value_type = typing.get_args(arg)[1] if typing.get_args(arg) else Any
            if _model_fields(value_type) is not None:  # a table of tables ([budgets.keys.<id>])
                return _walk_model(key, value_type, rest[1:])
        if typing.get_origin(arg) is dict and len(rest) == 1:
            value_type = typing.get_args(arg)[1] if typing.get_args(arg) else Any
            if value_type is Any:
                return KeyInfo(key, None, (), "any value")
            return KeyInfo(key, value_type, (), describe(value_type), None, model, name, rest[0])
    raise ConfigError(f"unknown key: {key} ({'.'.join(key.split('.')[: -len(rest)])} is not a table)")


def _settings_model(ref: Any, owner: str) -> Any:
    from hermes_core.refs import load_ref

    try:
        return load_ref(ref)
    except ImportError as exc:
        raise ConfigError(f"cannot load the settings model of {owner}: {exc}") from exc


def _free(key: str) -> KeyInfo:
    return KeyInfo(key, None, (), "any value")


def _provider_key(key: str, parts: list[str], registry: Registry | None) -> KeyInfo:
    from hermes_core.settings import CustomProvider, ProvidersSettings

    if parts[1] == "custom":
        if len(parts) > 2:
            raise ConfigError(f"unknown key: {key} (set the whole providers.custom list)")
        expected = "a list of {name, base_url, api_key_env} tables"
        return KeyInfo(key, list[CustomProvider], (), expected, [], ProvidersSettings, "custom")
    if registry is None:
        return _free(key)
    name = parts[1]
    spec = registry.providers.get(name)
    if spec is None:
        owners = [p for p in registry.providers.values() if any(pr.name == name for pr in p.presets)]
        if not owners:
            names = _provider_names(registry) | {"custom"}
            known = ", ".join(sorted(names - {"custom"})) or "none"
            hint = _did_you_mean(key, name, names)
            raise ConfigError(f"unknown key: {key} ({hint}no provider {name!r}; known providers: {known})")
        spec = owners[0]
    model = _settings_model(spec.settings_model, f"provider {spec.name}")
    if len(parts) == 2:
        return _table(key, model)
    if model is None:
        return _free(key)
    return _walk_model(key, model, parts[2:])


def _provider_names(registry: Registry) -> set[str]:
    names = set(registry.providers)
    for spec in registry.providers.values():
        names.update(p.name for p in spec.presets)
    return names


def _transport_key(key: str, parts: list[str], registry: Registry | None) -> KeyInfo | None:
    section = parts[0]
    if registry is not None:
        for spec in registry.transports.values():
            if spec.config_section == section:
                model = _settings_model(spec.settings_model, f"transport {spec.name}")
                if len(parts) == 1:
                    return _table(key, model)
                if model is None:
                    return _free(key)
                return _walk_model(key, model, parts[1:])
    if section in KNOWN_SECTIONS:
        return _table(key, None) if len(parts) == 1 else _free(key)
    return None


def _plugin_section_key(key: str, parts: list[str], registry: Registry | None) -> KeyInfo | None:
    """Describe a key in a table a plugin declared with ``hermes_config_sections``, or None."""
    spec = registry.config_sections.get(parts[0]) if registry is not None else None
    if spec is None:
        return None
    model = (
        _settings_model(spec.settings_model, f"config section {spec.name}") if spec.settings_model else None
    )
    if not spec.entries:
        if len(parts) == 1:
            return _table(key, model)
        return _free(key) if model is None else _walk_model(key, model, parts[1:])
    if len(parts) == 1:
        return _table(key, None)  # the entries' names are the user's: any table of tables
    if len(parts) == 2:
        return _table(key, model)
    return _free(key) if model is None else _walk_model(key, model, parts[2:])


def resolve_key(key: str, registry: Registry | None = None) -> KeyInfo:
    """Find what a dotted ``config.toml`` key accepts.

    :param key: e.g. ``agent.max_tool_rounds``, ``providers.openai.base_url``, ``api_server.port``.
    :param registry: the loaded plugins, to check provider and transport keys.
    :raises ConfigError: the key does not exist.
    """
    from hermes_core.settings import CoreSettings

    parts = key.split(".")
    if not key or any(not p for p in parts):
        raise ConfigError(f"unknown key: {key!r}")
    top = parts[0]
    if top in NOT_CONFIG_KEYS:
        raise ConfigError(f"unknown key: {key} (set by hermes itself, not in config.toml)")
    if top == "providers" and len(parts) > 1:
        return _provider_key(key, parts, registry)
    if top in CoreSettings.model_fields:
        return _walk_model(key, CoreSettings, parts)
    found = _transport_key(key, parts, registry) or _plugin_section_key(key, parts, registry)
    if found is not None:
        return found
    tops = set(CoreSettings.model_fields) - NOT_CONFIG_KEYS | KNOWN_SECTIONS
    if registry is not None:
        tops |= {s.config_section for s in registry.transports.values() if s.config_section}
        tops |= set(registry.config_sections)
    hint = _did_you_mean(key, top, tops)
    raise ConfigError(f"unknown key: {key}" + (f" ({hint.strip()})" if hint else ""))


def _did_you_mean(key: str, name: str, known: typing.Iterable[str]) -> str:
    """Return ``did you mean KEY? `` for the closest known name at this level, or ``""``."""
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    if not close:
        return ""
    parts = key.split(".")
    at = len(parts) - 1 - parts[::-1].index(name)
    return f"did you mean {'.'.join([*parts[:at], close[0], *parts[at + 1 :]])}? "
