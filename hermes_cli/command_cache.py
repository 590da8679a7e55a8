"""The transport commands ``hermes --help`` lists, remembered between runs.

A transport's command name and summary live in its ``TransportSpec``, which only importing the
plugin reveals, and ``hermes --help`` must stay cheap (no plugin, pluggy or stevedore import).
So whenever the CLI has loaded plugins it remembers, per plugin, the transports it declared and
whether it failed, keyed by the plugin's metadata fingerprint
(:func:`hermes_cli.entry_points.plugin_fingerprints`). Help reads that file; when a selected
plugin is missing or was reinstalled since, help loads the selected plugins once itself (slower)
and remembers them. A transport run without options remembers once it is up (or when it ends),
off its start-up path (:class:`hermes_cli.transport_run.TransportRun`). The file is a cache:
deleting it is always safe, and a write that fails is ignored.

It lives in the user cache directory (``$XDG_CACHE_HOME/hermes`` on Linux), never in
``HERMES_HOME``: it holds nothing of the user's, and read-only commands such as
``hermes acp --check`` leave ``HERMES_HOME`` untouched.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core.registry import Registry

FORMAT = 1
FILE_NAME = "commands.json"


@dataclass(slots=True)
class CommandListing:
    """What help shows: transport command → summary, and the plugins that failed to load."""

    transports: dict[str, str] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)


def cache_file() -> Path:
    """Return where the listing is remembered (nothing is created)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("hermes", appauthor=False)) / FILE_NAME


def _read() -> dict[str, Any]:
    try:
        data = json.loads(cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    if not isinstance(data.get("plugins"), dict):
        return {}
    plugins: dict[str, Any] = data["plugins"]
    return plugins


def _write(plugins: dict[str, Any]) -> None:
    path = cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps({"format": FORMAT, "plugins": plugins}, indent=1), encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        return


def remember(registry: Registry) -> dict[str, Any]:
    """Record what every entry-point plugin in ``registry`` contributed as commands.

    :param registry: the registry of a kernel the CLI just created.
    :returns: everything remembered now, plugin name → entry (also when the write failed).
    """
    from hermes_cli.entry_points import plugin_fingerprints

    fingerprints = plugin_fingerprints()
    known = _read()
    changed = False
    for record in registry.plugins:
        if record.source != "entry_point" or record.name not in fingerprints:
            continue
        transports = sorted(
            [name, registry.transports[name].summary]
            for (kind, name), owner in registry.owners.items()
            if kind == "transports" and owner == record.name and name in registry.transports
        )
        entry = {"fingerprint": fingerprints[record.name], "transports": transports, "failed": record.failed}
        if known.get(record.name) != entry:
            known[record.name] = entry
            changed = True
    if changed:
        _write(known)
    return known


def listing(selected: Sequence[str]) -> CommandListing:
    """Return the transports of the selected plugins, loading them only when not remembered.

    :param selected: entry-point names, as the plugin selection chose them.
    """
    from hermes_cli.entry_points import plugin_fingerprints

    fingerprints = plugin_fingerprints()
    known = _read()
    stale = [n for n in selected if (known.get(n) or {}).get("fingerprint") != fingerprints.get(n)]
    if stale:
        known = _load(list(selected)) or known
    result = CommandListing()
    for name in selected:
        entry = known.get(name)
        if not isinstance(entry, dict):
            continue
        if entry.get("failed"):
            result.failed.append(name)
        for command, summary in entry.get("transports") or ():
            result.transports.setdefault(str(command), str(summary))
    result.transports = dict(sorted(result.transports.items()))
    return result


def _load(names: list[str]) -> dict[str, Any]:
    """Load the plugins quietly (help prints only help) and remember what they declared."""
    import logging

    from hermes_cli.entry_points import plugin_sources
    from hermes_core import Kernel

    root = logging.getLogger()
    quiet = logging.NullHandler()
    root.addHandler(quiet)
    try:
        kernel = Kernel.create(entry_points=names, strict=False, discovered=plugin_sources())
    except Exception:
        return {}
    finally:
        root.removeHandler(quiet)
    return remember(kernel.registry)
