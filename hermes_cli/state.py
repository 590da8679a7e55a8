"""Per-invocation state shared by the CLI commands: the settings store and the kernel."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click

    from hermes_cli.store import FileSettingsStore
    from hermes_core.kernel import Kernel
    from hermes_core.registry import Registry


def setup_logging() -> None:
    """Send log records to stderr only: stdout belongs to replies and protocols."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING)


@dataclass(slots=True)
class CliState:
    """What one ``hermes`` invocation has loaded so far.

    :param allow: ``--plugin`` names (replace ``HERMES_PLUGINS``).
    :param deny: ``--no-plugin`` names (added to ``HERMES_DISABLE_PLUGINS``).
    :param add: ``--with-plugin`` names (added to the selected set).
    :param lenient: load with strict mode off whatever ``HERMES_STRICT_PLUGINS`` says
        (``hermes plugins`` shows every failure in its table instead of stopping at them).
    :param defer_remember: leave remembering the plugins' commands (for ``hermes --help``) to
        :meth:`remember_commands`, off a transport's start-up path.
    """

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    add: tuple[str, ...] = ()
    lenient: bool = False
    defer_remember: bool = False
    _store: FileSettingsStore | None = None
    _kernel: Kernel | None = None
    warned: set[str] = field(default_factory=set)
    _unremembered: Registry | None = None

    @property
    def store(self) -> FileSettingsStore:
        """Return the settings store (created on first use)."""
        if self._store is None:
            from hermes_cli.store import FileSettingsStore

            setup_logging()
            self._store = FileSettingsStore()
        return self._store

    def warn_once(self, message: str) -> None:
        """Print a warning on stderr unless it was printed already."""
        from hermes_cli.failures import warn

        if message not in self.warned:
            self.warned.add(message)
            warn(message)

    @property
    def kernel(self) -> Kernel:
        """Return the kernel with the selected plugins loaded (created on first use).

        :raises hermes_core.errors.PluginError: a plugin failed in strict mode.
        """
        if self._kernel is None:
            from hermes_cli.entry_points import installed_plugins, plugin_sources
            from hermes_cli.selection import select_plugins
            from hermes_core import Kernel

            store = self.store
            env = store.environment()
            selection = select_plugins(env, installed_plugins(), self.allow, self.deny, self.add)
            for message in [*store.warnings, *selection.warnings]:
                self.warn_once(message)
            if selection.trace:  # the kernel logs each hook call; show them on stderr
                logging.getLogger("hermes.plugins.trace").setLevel(logging.INFO)
            kernel = Kernel.create(
                entry_points=selection.entry_points,
                strict=selection.strict and not self.lenient,
                store=store,
                trace_plugins=selection.trace,
                discovered=plugin_sources(),
            )
            store.bind(kernel.registry)
            failed = any(p.failed for p in kernel.registry.plugins)
            every_plugin = selection.entry_points is True and not failed
            self._check_config_keys(kernel, every_plugin)
            from hermes_cli.startup_gc import settle

            self._unremembered = kernel.registry
            if not self.defer_remember:
                self.remember_commands()
            settle()
            for message in kernel.registry.warnings:
                self.warn_once(message)
            self._kernel = kernel
        return self._kernel

    def remember_commands(self) -> None:
        """Remember the loaded plugins' commands, so ``hermes --help`` lists them cheaply.

        Does nothing when no kernel was built, or after the first call.
        """
        registry, self._unremembered = self._unremembered, None
        if registry is not None:
            from hermes_cli.command_cache import remember

            remember(registry)

    def _check_config_keys(self, kernel: Kernel, every_plugin: bool) -> None:
        """Warn about unknown keys in ``config.toml``, each with the closest known key.

        :param every_plugin: every installed plugin is loaded; otherwise an unknown top-level
            table may belong to one that is not, and is left alone.
        """
        from hermes_cli.config_warnings import config_warnings
        from hermes_core.errors import ConfigError

        try:
            config = self.store.read_config()
        except ConfigError:
            return  # a malformed file is reported when the settings are loaded
        for message in config_warnings(config, kernel.registry, tables=every_plugin):
            self.warn_once(f"{self.store.paths.config_path}: {message}")


def get_state(ctx: click.Context) -> CliState:
    """Return the invocation's :class:`CliState`, built from the root options on first use.

    Works before the root group's callback has run (while a subcommand is being resolved).
    """
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        params = root.params
        root.obj = CliState(
            allow=tuple(params.get("plugin") or ()),
            deny=tuple(params.get("no_plugin") or ()),
            add=tuple(params.get("with_plugin") or ()),
        )
    return root.obj
