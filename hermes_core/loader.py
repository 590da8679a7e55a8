"""Plugin discovery and registration: stevedore imports, pluggy registers and dispatches.

Only the selected entry points of the ``hermes.plugins`` group are imported. A caller that has
already read the installed metadata (the CLI scans the distributions' ``entry_points.txt`` files
directly) passes what it found as :class:`EntryPointSource` rows; stevedore is then handed those
entry points instead of scanning the installed metadata again, which spares a command's start-up
the parsing of every distribution's headers. A plugin that fails
to import, to register, or to produce valid records is recorded as failed (lenient) or raises
:class:`~hermes_core.errors.PluginError` (strict). Records are collected one hook implementation
at a time so each is attributed to its plugin.
"""

from __future__ import annotations

import difflib
import logging
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import pluggy

from hermes_core import hookspecs
from hermes_core.errors import PluginError
from hermes_core.hook_calls import call_each, problem_with, trace_calls
from hermes_core.registry import FIRST_PARTY_DISTRIBUTION, RESERVED_COMMANDS, PluginRecord, Registry

if TYPE_CHECKING:
    from importlib import metadata

log = logging.getLogger("hermes.plugins")
GROUP = "hermes.plugins"
COLLECTIONS: tuple[tuple[str, str], ...] = (
    ("hermes_transports", "transports"),
    ("hermes_model_providers", "providers"),
    ("hermes_slash_commands", "commands"),
    ("hermes_storage_backends", "storage"),
    ("hermes_tools", "tools"),
    ("hermes_run_buses", "buses"),
    ("hermes_config_sections", "config_sections"),
    ("hermes_price_sources", "prices"),
    ("hermes_schemas", "schemas"),
    ("hermes_tracers", "tracers"),
    ("hermes_budget_ledgers", "ledgers"),
)


class EntryPointSource(NamedTuple):
    """One installed ``hermes.plugins`` entry point, as read from its distribution's metadata.

    :param name: the entry point's name (the plugin name).
    :param value: its target, ``module:attr`` as written in ``entry_points.txt``.
    :param distribution: the distribution that declares it.
    :param version: that distribution's version.
    """

    name: str
    value: str
    distribution: str | None = None
    version: str | None = None


def available_entry_points() -> dict[str, metadata.EntryPoint]:
    """Return the installed ``hermes.plugins`` entry points by name, importing nothing."""
    from importlib import metadata

    found: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=GROUP):
        found.setdefault(ep.name, ep)
    return found


def select_names(
    entry_points: bool | Sequence[str],
    disabled: Iterable[str],
    available: Iterable[str],
    warn: Callable[[str], None],
) -> list[str]:
    """Apply the allowlist and the disable list to the available names.

    :param entry_points: True for all, False for none, or an allowlist.
    :returns: the names to load, sorted.
    """
    names = set(available)
    if entry_points is True:
        chosen = set(names)
    elif entry_points is False:
        chosen = set()
    else:
        wanted = list(entry_points)
        unknown = [n for n in wanted if n not in names]
        if unknown:
            raise PluginError(
                f"unknown plugin(s): {', '.join(unknown)}; installed: {', '.join(sorted(names)) or 'none'}"
            )
        chosen = set(wanted)
    for name in disabled:
        if name not in names:
            warn(f"cannot disable unknown plugin {name!r}")
        chosen.discard(name)
    return sorted(chosen)


def load_plugins(
    entry_points: bool | Sequence[str],
    disabled: Iterable[str],
    plugins: Iterable[Any],
    discovered: Mapping[str, EntryPointSource] | None = None,
    *,
    strict: bool,
    trace: bool,
) -> PluginLoader:
    """Select and load the entry points, register ``plugins`` and collect their hooks.

    The selection's warnings (an unknown name, say) land in the registry's warnings.

    :param discovered: the installed entry points, when the caller has read them already;
        None reads them with ``importlib.metadata`` and loads them with stevedore.
    """
    loader = PluginLoader(strict, trace=trace)
    warnings: list[str] = []
    available = discovered if discovered is not None else available_entry_points()
    names = select_names(entry_points, disabled, available, warnings.append)
    if discovered is not None:
        loader.load_sources([discovered[name] for name in names])
    else:
        loader.load_entry_points(names)
    loader.load_objects(plugins)
    loader.collect()
    loader.registry.warnings.extend(warnings)
    loader.raise_if_failed()
    return loader


class PluginLoader:
    """Loads plugins into a fresh pluggy manager and fills a :class:`Registry`."""

    def __init__(self, strict: bool, trace: bool = False) -> None:
        self.strict = strict
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        if trace:
            trace_calls(self.pm)
        self.registry = Registry()
        self._first_error: BaseException | None = None

    def _fail(self, record: PluginRecord, reason: str, exc: BaseException | None = None) -> None:
        """Record a failure; strict mode raises once every plugin was tried (:meth:`raise_if_failed`)."""
        record.failed = reason
        if exc is not None:
            record.traceback = "".join(traceback.format_exception(exc))
            self._first_error = self._first_error or exc
        if self.pm.get_plugin(record.name) is not None:
            self.pm.unregister(name=record.name)
        self._drop_records_of(record.name)
        if not self.strict:
            log.warning("plugin %s failed: %s", record.name, reason)

    def raise_if_failed(self) -> None:
        """In strict mode, raise one :class:`PluginError` naming every plugin that failed.

        :raises PluginError: strict and at least one plugin failed; the first failure's exception
            is its cause.
        """
        failed = [p for p in self.registry.plugins if p.failed]
        if not self.strict or not failed:
            return
        lines = [f"plugin {p.name!r} failed: {p.failed}" for p in failed]
        message = lines[0] if len(lines) == 1 else f"{len(lines)} plugins failed:\n  " + "\n  ".join(lines)
        raise PluginError(message) from self._first_error

    def load_entry_points(self, names: Sequence[str]) -> None:
        """Import the named entry points with stevedore and register them."""
        if not names:
            return
        from stevedore import NamedExtensionManager

        failures: dict[str, BaseException] = {}

        def on_failure(_mgr: Any, ep: Any, exc: BaseException) -> None:
            failures[ep.name] = exc

        manager: Any = NamedExtensionManager(
            GROUP,
            names=list(names),
            invoke_on_load=False,
            name_order=True,
            on_load_failure_callback=on_failure,
            on_missing_entrypoints_callback=lambda missing: None,
        )
        loaded = {ext.name: ext for ext in manager.extensions}
        eps = available_entry_points()
        headers: dict[int, tuple[str | None, str | None]] = {}
        for name in names:
            ep = eps.get(name)
            dist = getattr(ep, "dist", None) if ep else None
            if id(dist) not in headers:  # each read of name or version parses the headers again
                meta = getattr(dist, "metadata", None)
                headers[id(dist)] = (meta["Name"], meta["Version"]) if meta is not None else (None, None)
            distribution, version = headers[id(dist)]
            record = self._record(name, distribution, version)
            if name in failures:
                exc = failures[name]
                self._fail(record, f"import failed: {type(exc).__name__}: {exc}", exc)
                continue
            ext = loaded.get(name)
            if ext is None:
                self._fail(record, "entry point could not be loaded")
                continue
            self._register(record, ext.plugin)

    def load_sources(self, sources: Sequence[EntryPointSource]) -> None:
        """Import entry points the caller found (see :class:`EntryPointSource`) with stevedore and
        register them: the same records and failures as :meth:`load_entry_points`, but stevedore
        is handed the entry points instead of scanning the installed metadata again."""
        if not sources:
            return
        from importlib.metadata import EntryPoint

        from stevedore import NamedExtensionManager

        found = [EntryPoint(source.name, source.value, GROUP) for source in sources]

        class _Found(NamedExtensionManager):
            def list_entry_points(self) -> list[EntryPoint]:
                return found

        failures: dict[str, BaseException] = {}

        def on_failure(_mgr: Any, ep: Any, exc: BaseException) -> None:
            failures[ep.name] = exc

        manager: Any = _Found(
            GROUP,
            names=[source.name for source in sources],
            invoke_on_load=False,
            name_order=True,
            on_load_failure_callback=on_failure,
            on_missing_entrypoints_callback=lambda missing: None,
        )
        loaded = {ext.name: ext for ext in manager.extensions}
        for source in sources:
            record = self._record(source.name, source.distribution, source.version)
            if source.name in failures:
                exc = failures[source.name]
                self._fail(record, f"import failed: {type(exc).__name__}: {exc}", exc)
                continue
            ext = loaded.get(source.name)
            if ext is None:
                self._fail(record, "entry point could not be loaded")
                continue
            self._register(record, ext.plugin)

    def _record(self, name: str, distribution: str | None, version: str | None) -> PluginRecord:
        record = PluginRecord(
            name=name,
            version=version,
            distribution=distribution,
            first_party=distribution == FIRST_PARTY_DISTRIBUTION,
        )
        self.registry.plugins.append(record)
        return record

    def load_objects(self, plugins: Iterable[Any]) -> None:
        """Register plugin objects passed in directly (embedding and tests)."""
        for index, plugin in enumerate(plugins):
            name = getattr(plugin, "hermes_plugin_name", None) or getattr(plugin, "__name__", None)
            name = name or f"{type(plugin).__name__}-{index}"
            record = PluginRecord(name=str(name), source="object", first_party=False)
            self.registry.plugins.append(record)
            self._register(record, plugin)

    def _register(self, record: PluginRecord, plugin: Any) -> None:
        try:
            self.pm.register(plugin, name=record.name)
            self.pm.check_pending()
            problem = problem_with(self.pm, plugin)
            if problem:
                raise PluginError(problem)
        except Exception as exc:  # a bad hookimpl (typo'd name, wrong argument)
            reason = _unknown_hooks(self.pm, plugin) or str(exc)
            self._fail(record, f"registration failed: {reason}", exc)
            return
        record.hooks = tuple(sorted(impl.name for impl in self.pm.get_hookcallers(plugin) or ()))
        self.registry.warnings.extend(_unmarked_hooks(self.pm, record.name, plugin))

    def collect(self) -> Registry:
        """Call every collection hook (in pluggy's order, one result per plugin) and fill the registry."""
        by_name = {p.name: p for p in self.registry.plugins}
        for hook_name, kind in COLLECTIONS:
            for outcome in call_each(self.pm, hook_name):
                record = by_name.get(outcome.plugin)
                if record is None or record.failed:
                    continue
                if outcome.error is not None:
                    error = outcome.error
                    self._fail(record, f"{hook_name} raised {type(error).__name__}: {error}", error)
                    continue
                result = outcome.value
                items = (
                    [] if result is None else list(result) if isinstance(result, list | tuple) else [result]
                )
                for item in items:
                    self._add(kind, item, record)
        return self.registry

    def _add(self, kind: str, item: Any, record: PluginRecord) -> None:
        table: dict[str, Any] = getattr(self.registry, kind)
        name = getattr(item, "name", None)
        if not isinstance(name, str) or not name:
            self._fail(record, f"{kind} record without a name: {item!r}")
            return
        if kind == "transports" and name in RESERVED_COMMANDS:
            self._fail(record, f"transport name {name!r} is reserved for a built-in command")
            return
        owner = self.registry.owners.get((kind, name))
        if owner is None:
            table[name] = item
            self.registry.owners[(kind, name)] = record.name
            return
        other = self.registry.plugin(owner)
        message = f"duplicate {kind[:-1]} {name!r} from plugins {owner!r} and {record.name!r}"
        if self.strict:  # strict: the newcomer fails, and every failure is reported at the end
            self._fail(record, message)
            return
        # Lenient: first-party wins, else the first entry-point name in sort order wins.
        keep_existing = bool(other and other.first_party) or (
            not record.first_party and (other is not None and other.name <= record.name)
        )
        if keep_existing:
            self._fail(record, message)
        else:
            table[name] = item
            self.registry.owners[(kind, name)] = record.name
            if other is not None:
                self._fail(other, message)

    def _drop_records_of(self, plugin_name: str) -> None:
        for (kind, name), owner in list(self.registry.owners.items()):
            if owner == plugin_name:
                getattr(self.registry, kind).pop(name, None)
                del self.registry.owners[(kind, name)]


def _unknown_hooks(pm: pluggy.PluginManager, plugin: Any) -> str | None:
    """Name the hooks ``plugin`` implements that no spec declares, each with the closest real one."""
    callers = vars(pm.hook).values()
    known = sorted(c.name for c in callers if isinstance(c, pluggy.HookCaller) and c.has_spec())
    parts = []
    for caller in pm.get_hookcallers(plugin) or ():
        if caller.has_spec():
            continue
        close = difflib.get_close_matches(caller.name, known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else f" (the hooks are: {', '.join(known)})"
        parts.append(f"unknown hook {caller.name}{hint}")
    return "; ".join(parts) or None


def _unmarked_hooks(pm: pluggy.PluginManager, name: str, plugin: Any) -> list[str]:
    """Warn about functions named like a hook (or nearly) that lack ``@hookimpl``: pluggy skips them."""
    callers = vars(pm.hook).values()
    known = sorted(c.name for c in callers if isinstance(c, pluggy.HookCaller) and c.has_spec())
    marker = f"{hookspecs.PROJECT}_impl"
    found: list[str] = []
    for attr in sorted(a for a in dir(plugin) if a.startswith("hermes_")):
        value = getattr(plugin, attr, None)
        if not callable(value) or isinstance(value, type) or hasattr(value, marker):
            continue
        if attr in known:
            found.append(f"plugin {name!r}: {attr} is not marked with @hookimpl, so it is never called")
            continue
        close = difflib.get_close_matches(attr, known, n=1, cutoff=0.8)
        if close:
            hint = f"(did you mean {close[0]}?)"
            found.append(f"plugin {name!r}: {attr} is not a hook and not marked with @hookimpl {hint}")
    return found
