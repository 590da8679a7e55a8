"""Let a transport start its handshake before the CLI loads click, stevedore and the plugins.

Loading every plugin takes a couple of hundred milliseconds on a small machine, and an IDE waits
for the reply to its first request all that time. A plugin that can answer that request from
static data declares an entry point in the group ``hermes.early``, named like its command
(``acp = "hermes_acp.early:begin"``). For ``hermes NAME`` the CLI finds that entry point by reading
the installed distributions' ``entry_points.txt`` files directly (``importlib.metadata`` alone
costs more than the whole early step), in the one pass that also finds the plugins
(:mod:`hermes_cli.entry_points`), and calls it with the arguments after ``NAME`` and a
function telling whether the environment's plugin selection includes a plugin name, before
anything else is imported. The callable must be quick, must not raise, and must leave its work in
a state that the plugin's transport factory picks up later. Built-in command names never get
an entry-point hook (only the ones in :data:`BUILTIN_EARLY`), and a plugin disabled by
``HERMES_PLUGINS`` / ``HERMES_DISABLE_PLUGINS`` is skipped.

A hook that takes a third argument also gets an :class:`EarlyContext`: a fingerprint of
everything the settings are made of (the environment, ``config.toml`` and ``.env``) and the
user cache directory, so it can answer from what a full start of the same command cached —
without reading the environment itself, which plugins never do.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

GROUP = "hermes.early"  # read by hermes_cli.entry_points (EARLY_GROUP)
# Built-in commands with an early step of their own: ``hermes chat`` starts its gateway
# (docs/chat.md). Named by string, like the commands in :mod:`hermes_cli.root_help`.
BUILTIN_EARLY = {"chat": "hermes_chat.spawn:begin"}


class EarlyContext:
    """What the CLI tells an early hook that takes a third argument.

    :param environ: the process environment.
    """

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def fingerprint(self) -> str:
        """Return a digest that changes whenever the settings could: any environment variable,
        ``config.toml`` or ``.env`` (their size and modification time), or the Hermes version."""
        import hashlib

        from hermes_cli.paths import resolve_paths
        from hermes_core import __version__

        paths = resolve_paths(self._environ)
        digest = hashlib.sha256(__version__.encode())
        for key in sorted(self._environ):
            digest.update(f"\0{key}={self._environ[key]}".encode("utf-8", "surrogateescape"))
        for path in (paths.config_path, paths.env_path):
            try:
                stat = os.stat(path)
            except OSError:
                digest.update(f"\0{path}:absent".encode())
            else:
                digest.update(f"\0{path}:{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ino}".encode())
        return digest.hexdigest()

    @property
    def cache_dir(self) -> Path:
        """Return the user cache directory (``$XDG_CACHE_HOME/hermes`` on Linux); it may not exist."""
        import platformdirs

        return Path(platformdirs.user_cache_dir("hermes", appauthor=False))


def _call(
    hook: Callable[..., object], args: list[str], selected: Callable[[str], bool], environ: Mapping[str, str]
) -> None:
    """Call a hook with two arguments, or three when its signature takes an :class:`EarlyContext`."""
    code = getattr(hook, "__code__", None)
    if code is not None and code.co_argcount >= 3:
        hook(args, selected, EarlyContext(environ))
    else:
        hook(args, selected)


def _disabled(name: str, env: Mapping[str, str]) -> bool:
    """Say whether the environment keeps plugin ``name`` from loading."""

    def names(value: str) -> set[str]:
        return {part.strip() for part in value.split(",") if part.strip()}

    if "HERMES_PLUGINS" in env and name not in names(env["HERMES_PLUGINS"]):
        return True
    return name in names(env.get("HERMES_DISABLE_PLUGINS", ""))


def find_early(name: str, path: Sequence[str] | None = None) -> str | None:
    """Find the ``module:attr`` declared for ``name`` in the ``hermes.early`` group.

    The files are read by :mod:`hermes_cli.entry_points` in the same pass as the plugins, once
    per process: the plugin selection that follows reuses that scan.

    :param name: the command name.
    :param path: the directories to search (``sys.path`` when omitted).
    :returns: the entry point's value, or ``None`` if no installed distribution declares one.
    """
    from hermes_cli.entry_points import early_hooks

    return early_hooks(path).get(name)


def start_early(args: Sequence[str], env: Mapping[str, str] | None = None) -> bool:
    """Call the early hook of the command in ``args[0]``, if one is declared and allowed.

    Any failure is swallowed: the regular start-up loads the plugin again and reports it.

    :param args: the command line after the program name; ``args[0]`` is the command.
    :param env: the environment (``os.environ`` when omitted).
    :returns: whether a hook ran.
    """
    if not args or args[0].startswith("-"):
        return False
    name = args[0]
    from hermes_cli.root_help import BUILTINS

    environ = os.environ if env is None else env
    target = BUILTIN_EARLY.get(name)
    if target is None:
        if name in BUILTINS or _disabled(name, environ):
            return False
        target = find_early(name)
    if target is None:
        return False
    module_name, _, attr = target.partition(":")
    try:
        import importlib

        hook = getattr(importlib.import_module(module_name.strip()), attr.strip())
        _call(hook, list(args[1:]), lambda plugin: not _disabled(plugin, environ), environ)
    except Exception:
        return False
    return True
