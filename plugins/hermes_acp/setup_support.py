"""What ``hermes acp --setup`` knows about providers, and how it tests and protects files.

- :class:`Choice`: one provider name the kernel knows (a provider plugin, one of its presets, or a
  ``[[providers.custom]]`` entry) with its key variable and default endpoint.
- :func:`connection_test`: one small completion built from the unsaved answers.
- :class:`FileSnapshot`: the bytes of ``config.toml`` or ``.env`` before writing, to put back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_acp.settings import AcpSettings
    from hermes_core import ProviderPreset, ProviderSpec, SettingsStore, TransportContext

CONNECTION_TEST_TIMEOUT_S = 30.0
# Enough room for a reasoning model to say something; the test only needs the call to succeed.
CONNECTION_TEST_MAX_TOKENS = 16


def normalise_url(url: str) -> str:
    """Return ``url`` without surrounding blanks or a trailing ``/`` (as the settings keep it)."""
    return url.strip().rstrip("/")


@dataclass(slots=True)
class Choice:
    """One provider name offered by the setup.

    :param spec: the provider plugin that serves the name.
    :param preset: the preset (or, for a custom entry, a preset made from it), else None.
    :param custom: the raw ``[[providers.custom]]`` entry when the name is a custom endpoint.
    :param models: the offline model list from the kernel's catalog.
    """

    name: str
    summary: str
    spec: ProviderSpec
    preset: ProviderPreset | None = None
    custom: dict[str, Any] | None = None
    models: list[str] = field(default_factory=list)

    @property
    def _env_vars(self) -> Mapping[str, str]:
        if self.custom is not None:
            var = self.custom.get("api_key_env")
            return {"api_key": var} if isinstance(var, str) and var else {}
        return self.preset.env_vars if self.preset is not None else self.spec.env_vars

    @property
    def key_required(self) -> bool:
        """Whether the provider cannot be called without a key."""
        if self.custom is not None:
            return False
        return self.preset.requires_key if self.preset is not None else self.spec.requires_key

    @property
    def key_var(self) -> str | None:
        """The variable the key is stored under; None when no key is asked."""
        if not self.key_required and self.custom is None:
            return None
        return self._env_vars.get("api_key")

    @property
    def base_url_var(self) -> str | None:
        """The variable that overrides the base URL at start-up, if any."""
        return self._env_vars.get("base_url")

    @property
    def asks_base_url(self) -> bool:
        """Whether this is an OpenAI-compatible endpoint (the generic provider or one it serves)."""
        return self.preset is not None or self.spec.serves_custom

    @property
    def default_base_url(self) -> str | None:
        """The endpoint used when ``config.toml`` names none."""
        return normalise_url(self.preset.base_url) if self.preset is not None else None

    @property
    def testable(self) -> bool:
        """Whether a connection test means anything (the provider talks to some endpoint)."""
        return self.asks_base_url or self.key_required or bool(self._env_vars)

    def configured_base_url(self, store: SettingsStore) -> str | None:
        """Return the base URL ``config.toml`` gives this name now, if any."""
        value = self.custom.get("base_url") if self.custom is not None else store.get(self._key("base_url"))
        return normalise_url(value) if isinstance(value, str) and value.strip() else None

    def _key(self, name: str) -> str:
        return f"providers.{self.name}.{name}"

    def section(self, store: SettingsStore, env: Mapping[str, str]) -> dict[str, Any]:
        """Return ``providers.<name>`` as the kernel would see it: config, then the environment."""
        table = store.get(f"providers.{self.name}")
        raw: dict[str, Any] = dict(table) if isinstance(table, dict) else {}
        for field_name, var in self._env_vars.items():
            if env.get(var):
                raw[field_name] = env[var]
        if self.custom is not None:
            raw["base_url"] = self.custom.get("base_url")
        return raw


def _custom_entries(store: SettingsStore) -> dict[str, dict[str, Any]]:
    entries = store.get("providers.custom")
    found: dict[str, dict[str, Any]] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry.get("base_url"):
            found.setdefault(entry["name"], dict(entry))
    return found


async def _catalog(ctx: TransportContext[AcpSettings]) -> dict[str, Any] | None:
    """Return the kernel's offline catalog, or None when the kernel could not start."""
    try:
        await ctx.ready
        return await ctx.kernel.model_catalog(network=False)
    except Exception:
        return None


async def gather_choices(
    ctx: TransportContext[AcpSettings], store: SettingsStore
) -> tuple[list[Choice], str | None]:
    """Return every provider name the kernel knows, in the kernel's order, and the current one.

    Without a started kernel (a broken ``config.toml``), the names come from the plugin registry
    and the custom entries, without model lists.
    """
    from hermes_core import ProviderPreset

    specs: dict[str, ProviderSpec] = dict(ctx.kernel.registry.providers)
    presets: dict[str, tuple[ProviderSpec, ProviderPreset]] = {}
    for spec in specs.values():
        for preset in spec.presets:
            if preset.name not in specs:
                presets.setdefault(preset.name, (spec, preset))
    customs = _custom_entries(store)
    custom_spec = next((s for s in specs.values() if s.serves_custom), None)

    def make(name: str) -> Choice | None:
        if name in specs:
            return Choice(name, specs[name].summary, specs[name])
        if name in presets:
            spec, preset = presets[name]
            return Choice(name, preset.summary, spec, preset)
        if name in customs and custom_spec is not None:
            entry = customs[name]
            url = str(entry["base_url"])
            preset = ProviderPreset(
                name=name, summary=f"custom endpoint {name}", base_url=url, requires_key=False
            )
            return Choice(name, f"custom endpoint at {url}", custom_spec, preset, entry)
        return None

    catalog = await _catalog(ctx)
    rows = [r for r in (catalog or {}).get("providers") or [] if isinstance(r, dict)]
    names = [str(r.get("slug")) for r in rows] or [*specs, *presets, *customs]
    choices: list[Choice] = []
    for name in dict.fromkeys(names):
        choice = make(name)
        if choice is not None:
            choices.append(choice)
    models = {str(r.get("slug")): [str(m) for m in r.get("models") or []] for r in rows}
    for choice in choices:
        choice.models = models.get(choice.name, [])
    current = next((str(r["slug"]) for r in rows if r.get("is_current")), None)
    return choices, current


def _settings_class(ref: Any) -> Any:
    """Resolve a spec's ``settings_model`` (a class or ``"module:Class"``) as the kernel does."""
    from hermes_core import load_ref

    return load_ref(ref)


def _describe(exc: BaseException) -> str:
    from hermes_core import ProviderError

    if isinstance(exc, ProviderError):
        # Provider messages already name the provider, the HTTP status and the key variable.
        return exc.message or exc.kind
    if isinstance(exc, TimeoutError):
        return f"no answer within {CONNECTION_TEST_TIMEOUT_S:.0f} s"
    return f"{type(exc).__name__}: {exc}"


async def connection_test(
    choice: Choice,
    model: str,
    key: str,
    base_url: str | None,
    store: SettingsStore,
    env: Mapping[str, str],
) -> str | None:
    """Make one small completion with the unsaved answers.

    The provider is built from its spec exactly as the kernel would, but from the settings in
    ``config.toml`` and the environment overlaid with the answers, so nothing is written first.

    :param key: the key typed in, or "" to use the configured one.
    :param base_url: the endpoint answered, or None for the provider's default.
    :returns: None when the call succeeded, else a redacted one-line reason.
    """
    from hermes_core import ChatMessage, ChatRequest, redact

    section = choice.section(store, env)
    if key:
        section["api_key"] = key
    if choice.asks_base_url and choice.custom is None:
        if base_url:
            section["base_url"] = base_url
        else:
            section.pop("base_url", None)
    elif base_url:
        section["base_url"] = base_url
    secrets = [s for s in (key, str(section.get("api_key") or "")) if s]
    request = ChatRequest(
        model=model,
        messages=(ChatMessage(role="user", content="Reply with the single word: ok"),),
        options={"max_tokens": CONNECTION_TEST_MAX_TOKENS},
        purpose="one_shot",
    )
    try:
        model_class = _settings_class(choice.spec.settings_model)
        settings = model_class.model_validate(section) if model_class is not None else dict(section)
        provider = choice.spec.factory(settings, name=choice.name, preset=choice.preset)
        try:
            async with asyncio.timeout(CONNECTION_TEST_TIMEOUT_S):
                async for _chunk in provider.stream(request):
                    pass
        finally:
            with contextlib.suppress(Exception):
                await provider.aclose()
    except Exception as exc:
        text = " ".join(_describe(exc).split())
        return redact(text, secrets)
    return None


@dataclass(frozen=True, slots=True)
class FileSnapshot:
    """A file's bytes and mode (or its absence) at one moment."""

    path: Path | None
    data: bytes | None
    mode: int | None

    @classmethod
    def take(cls, path: Path | None) -> FileSnapshot:
        """Record ``path`` as it is now (nothing to record when the store has no such file)."""
        if path is None:
            return cls(None, None, None)
        try:
            return cls(path, path.read_bytes(), path.stat().st_mode & 0o777)
        except FileNotFoundError:
            return cls(path, None, None)

    def restore(self) -> None:
        """Put the file back exactly: same bytes and mode, or no file at all."""
        if self.path is None:
            return
        if self.data is None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".restore", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(self.data)
            os.chmod(tmp, self.mode if self.mode is not None else 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
