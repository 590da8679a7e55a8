"""Providers by name, the model resolver and the model catalog (docs/reference/core.md#providers-and-models).

Provider names come from three places: each ``ProviderSpec``, each spec's presets, and the
``[[providers.custom]]`` entries (served by the spec with ``serves_custom``). Instances are built
lazily, once per name, from the provider's validated settings.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from hermes_core.errors import ConfigError, ModelNotFound, ProviderError
from hermes_core.providers import ModelInfo, Provider, ProviderPreset
from hermes_core.records import ProviderSpec
from hermes_core.redaction import Redactor
from hermes_core.refs import load_ref

log = logging.getLogger("hermes.models")


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """A model reference resolved to a provider name and that provider's model id."""

    provider: str
    model: str
    info: ModelInfo | None = None

    @property
    def ref(self) -> str:
        return f"{self.provider}:{self.model}"


@dataclass(frozen=True, slots=True)
class ModelStatus:
    """The kernel's default model and whether it can answer (``Kernel.model_status``).

    :param model: the ``provider:model`` reference, or None when there is none.
    :param source: where it came from: ``flag``, ``env``, ``config``, ``default`` or ``fallback``
        (nothing configured: the offline ``mock:echo``).
    :param problem: why its provider cannot answer yet (a missing API key), or None.
    """

    model: str | None
    source: str
    problem: str | None = None

    @property
    def fallback(self) -> bool:
        """True when nothing is configured and the offline mock answers."""
        return self.source == "fallback"


@dataclass(slots=True)
class _Entry:
    """One configured provider: its spec, preset, settings and instance once made."""

    name: str
    spec: ProviderSpec
    preset: ProviderPreset | None
    custom: bool
    settings: dict[str, Any]
    instance: Provider | None = None
    cache: list[ModelInfo] | None = None
    fetched_at: float | None = None
    probe_error: str | None = None
    refreshing: asyncio.Task[None] | None = field(default=None)


def _clean_url(url: str | None) -> str | None:
    if not url:
        return None
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class ProviderHub:
    """Owns provider instances and their model caches for one kernel."""

    def __init__(self, specs: dict[str, ProviderSpec], settings: Any, redactor: Redactor) -> None:
        self._entries: dict[str, _Entry] = {}
        self._settings = settings
        self._redactor = redactor
        self.configure(specs, settings)

    def configure(self, specs: dict[str, ProviderSpec], settings: Any) -> None:
        """(Re)build the table of provider names from specs and settings."""
        self._settings = settings
        old = self._entries
        entries: dict[str, _Entry] = {}
        for spec in specs.values():
            entries[spec.name] = _Entry(spec.name, spec, None, False, settings.providers.section(spec.name))
            for preset in spec.presets:
                if preset.name in entries or preset.name in specs:
                    continue
                entries[preset.name] = _Entry(
                    preset.name, spec, preset, False, settings.providers.section(preset.name)
                )
        custom_spec = next((s for s in specs.values() if s.serves_custom), None)
        for custom in settings.providers.custom:
            if custom.name in entries:
                raise ConfigError(
                    f"custom provider {custom.name!r} clashes with a registered provider; "
                    "rename it in config.toml"
                )
            if custom_spec is None:
                raise ConfigError(
                    f"custom provider {custom.name!r} needs the 'openai' plugin, which is not loaded"
                )
            preset = ProviderPreset(
                name=custom.name,
                summary=f"custom endpoint {custom.name}",
                base_url=custom.base_url,
                requires_key=False,
            )
            section = {**settings.providers.section(custom.name), "base_url": custom.base_url}
            if custom.api_key:
                section["api_key"] = custom.api_key
            entries[custom.name] = _Entry(custom.name, custom_spec, preset, True, section)
        for name, entry in entries.items():
            self._redactor.add(entry.settings.get("api_key"))
            prev = old.get(name)
            if prev is not None and prev.settings == entry.settings and prev.spec is entry.spec:
                entry.instance, entry.cache, entry.fetched_at = prev.instance, prev.cache, prev.fetched_at
        self._entries = entries

    def names(self) -> list[str]:
        return list(self._entries)

    def has(self, name: str) -> bool:
        return name in self._entries

    def is_custom(self, name: str) -> bool:
        """Whether ``name`` is a user-defined endpoint: a ``[[providers.custom]]`` entry, or a
        provider or preset whose ``base_url`` the settings point somewhere else than its default.

        Only such endpoints are probed live by the catalog (their model lists are not known
        offline).
        """
        entry = self._entries.get(name)
        if entry is None:
            return False
        if entry.custom:
            return True
        configured = _clean_url(entry.settings.get("base_url"))
        if not configured:
            return False
        default = entry.preset.base_url if entry.preset else entry.spec.base_url
        return configured.rstrip("/") != (_clean_url(default) or "").rstrip("/")

    def is_custom_entry(self, name: str) -> bool:
        """Whether ``name`` comes from a ``[[providers.custom]]`` entry of the settings."""
        entry = self._entries.get(name)
        return bool(entry and entry.custom)

    def spec(self, name: str) -> ProviderSpec:
        return self._entries[name].spec

    def requires_key(self, name: str) -> bool:
        """Whether the provider needs an API key at all (its preset's or spec's ``requires_key``)."""
        entry = self._entries[name]
        return entry.preset.requires_key if entry.preset else entry.spec.requires_key

    def has_key(self, name: str) -> bool:
        """Whether an API key is configured for the provider (needed or not)."""
        return bool(self._entries[name].settings.get("api_key"))

    def authenticated(self, name: str) -> bool:
        """Whether the provider has what it needs to be called (a key where one is required)."""
        entry = self._entries[name]
        return bool(entry.settings.get("api_key")) or not self.requires_key(name)

    def key_var(self, name: str) -> str | None:
        """Return the environment variable that holds the provider's API key, if it names one."""
        entry = self._entries[name]
        return (entry.preset.env_vars if entry.preset else entry.spec.env_vars).get("api_key")

    def missing_key_hint(self, name: str) -> str | None:
        """Return how to configure the key when the provider needs one and has none."""
        if self.authenticated(name):
            return None
        env = self.key_var(name)
        where = f"set {env} (environment or .env)" if env else "set its api_key"
        return f"provider {name!r} has no API key: {where}, or providers.{name}.api_key in config.toml"

    def get(self, name: str) -> Provider:
        """Return the live provider instance, building it on first use."""
        entry = self._entries.get(name)
        if entry is None:
            raise ModelNotFound(name, self.names(), message=f"unknown provider: {name}")
        if entry.instance is None:
            model_cls = load_ref(entry.spec.settings_model)
            try:
                settings = (
                    model_cls.model_validate(entry.settings)
                    if model_cls is not None
                    else dict(entry.settings)
                )
            except Exception as exc:
                raise ConfigError(
                    f"invalid settings for provider {name!r} (providers.{name}): {exc}"
                ) from exc
            entry.instance = entry.spec.factory(settings, name=name, preset=entry.preset)
            record_dir = getattr(self._settings, "record_dir", None)
            if record_dir is not None and entry.spec.name != "mock":
                from hermes_core.scenarios.recording import RecordingProvider

                entry.instance = RecordingProvider(entry.instance, name, Path(record_dir), self._redactor)
        return entry.instance

    async def offline_models(self, name: str) -> list[ModelInfo]:
        """Return the provider's offline list (its own list merged with our probe cache)."""
        entry = self._entries[name]
        try:
            listed = await self.get(name).list_models()
        except Exception as exc:
            log.warning("listing models of %s failed: %s", name, self._redactor(str(exc)))
            listed = []
        seen = {m.id for m in listed}
        return listed + [m for m in entry.cache or () if m.id not in seen]

    async def probe(self, name: str, timeout: float) -> None:
        """Probe one provider live and remember the result (success or failure)."""
        entry = self._entries[name]
        try:
            models = await asyncio.wait_for(self.get(name).probe(timeout), timeout + 0.5)
        except (ProviderError, TimeoutError, OSError, ConfigError) as exc:
            entry.probe_error = self._redactor(str(exc) or type(exc).__name__)
            return
        entry.cache, entry.fetched_at, entry.probe_error = list(models), time.time(), None

    def probe_state(self, name: str) -> dict[str, Any]:
        entry = self._entries[name]
        state: dict[str, Any] = {}
        if entry.fetched_at is not None:
            state["fetched_at"] = (
                datetime.fromtimestamp(entry.fetched_at, UTC).isoformat().replace("+00:00", "Z")
            )
        if entry.probe_error:
            state["error"] = entry.probe_error
        return state

    def asked(self, name: str) -> bool:
        """Whether this process has probed the provider (successfully or not) since its cache
        was last emptied."""
        entry = self._entries[name]
        return entry.fetched_at is not None or entry.probe_error is not None

    def cache_age(self, name: str) -> float | None:
        entry = self._entries[name]
        return None if entry.fetched_at is None else time.time() - entry.fetched_at

    def clear_cache(self) -> None:
        for entry in self._entries.values():
            entry.cache, entry.fetched_at, entry.probe_error = None, None, None

    def base_url(self, name: str) -> str | None:
        entry = self._entries[name]
        default = entry.preset.base_url if entry.preset else entry.spec.base_url
        return _clean_url(entry.settings.get("base_url") or default)

    async def aclose(self) -> None:
        for entry in self._entries.values():
            if entry.instance is not None:
                try:
                    await entry.instance.aclose()
                except Exception:  # closing must never fail shutdown
                    log.debug("closing provider %s failed", entry.name, exc_info=True)
                entry.instance = None
