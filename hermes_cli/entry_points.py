"""The installed ``hermes.plugins`` entry-point names, read without importing any plugin.

``hermes --help`` has a 100 ms budget and ``importlib.metadata`` alone costs about a third of
it (it imports ``email``, ``zipfile``, ``csv``…), so the common case — distributions unpacked in
directories on ``sys.path`` — is read straight from their ``entry_points.txt`` files, with the same
rule as ``importlib.metadata`` (the first distribution of a name on ``sys.path`` wins). Zipped
path entries fall back to ``importlib.metadata``.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from hermes_core.loader import EntryPointSource

GROUP = "hermes.plugins"
#: Commands' early hooks (hermes_cli/early.py), read in the same pass.
EARLY_GROUP = "hermes.early"
_META_SUFFIXES = (".dist-info", ".egg-info")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _section_entries(text: str, section: str) -> list[str]:
    """Return the entry names of one ``[section]`` of an ``entry_points.txt``."""
    return [name for name, _ in _section_items(text, section)]


def _section_items(text: str, section: str) -> list[tuple[str, str]]:
    """Return the (name, value) pairs of one ``[section]`` of an ``entry_points.txt``."""
    items: list[tuple[str, str]] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == section
            continue
        if inside and "=" in line:
            name, value = line.split("=", 1)
            items.append((name.strip(), value.strip()))
    return items


#: What the scan found of one entry point: distribution, fingerprint, target value, version.
Found = tuple[str, str, str, str | None]


def _dist_headers(meta_dir: str, fallback: str) -> tuple[str, str | None]:
    """Read ``Name:`` and ``Version:`` from a distribution's metadata headers."""
    for filename in ("METADATA", "PKG-INFO"):
        name, version = fallback, None
        try:
            with open(os.path.join(meta_dir, filename), encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith("Name:"):
                        name = line[5:].strip()
                    elif line.startswith("Version:"):
                        version = line[8:].strip()
                    elif not line.strip():
                        break
        except OSError:
            continue
        return name, version
    return fallback, None


class _Scan(NamedTuple):
    """What one scan of the path found."""

    found: dict[str, Found]
    #: command name → the ``module:attr`` of its ``hermes.early`` hook
    early: dict[str, str]


def _scan_directories(paths: list[str]) -> _Scan:
    """Return entry-point name → what was found of it, from unpacked metadata directories."""
    found: dict[str, Found] = {}
    early: dict[str, str] = {}
    seen: set[str] = set()
    for entry in paths:
        try:
            listing = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for child in listing:
            if not child.endswith(_META_SUFFIXES):
                continue
            stem = child.rsplit(".", 1)[0]
            key = _normalise(stem.split("-", 1)[0])
            if key in seen:
                continue
            seen.add(key)
            meta_dir = os.path.join(entry or ".", child)
            points = os.path.join(meta_dir, "entry_points.txt")
            try:
                with open(points, encoding="utf-8") as handle:
                    text = handle.read()
                stamp = os.stat(points).st_mtime_ns
            except OSError:
                continue
            if f"[{EARLY_GROUP}]" in text:
                for name, value in _section_items(text, EARLY_GROUP):
                    early.setdefault(name, value)
            items = _section_items(text, GROUP)
            if items:
                dist, version = _dist_headers(meta_dir, stem.split("-", 1)[0])
                for name, value in items:
                    fingerprint = f"{os.path.abspath(meta_dir)}|{stamp}|{value}"
                    found.setdefault(name, (dist, fingerprint, value, version))
    return _Scan(found, early)


def _scan_metadata() -> _Scan:
    from importlib import metadata

    found: dict[str, Found] = {}
    for ep in metadata.entry_points(group=GROUP):
        dist = getattr(ep, "dist", None)
        name = getattr(dist, "name", None) or "?"
        version = getattr(dist, "version", None)
        fingerprint = f"{name}|{version}|{getattr(dist, '_path', '')}|{ep.value}"
        found.setdefault(ep.name, (name, fingerprint, ep.value, version))
    early: dict[str, str] = {}
    for ep in metadata.entry_points(group=EARLY_GROUP):
        early.setdefault(ep.name, ep.value)
    return _Scan(found, early)


def _scan() -> _Scan:
    return _scan_path(tuple(sys.path))


@functools.lru_cache(maxsize=4)
def _scan_path(paths: tuple[str, ...]) -> _Scan:
    """Scan once per process (and per ``sys.path``): selection and the command cache both ask."""
    if any(os.path.isfile(p) for p in paths if p):
        scan = _scan_metadata()
    else:
        scan = _scan_directories(list(paths))
    return _Scan(dict(sorted(scan.found.items())), scan.early)


def early_hooks(path: Sequence[str] | None = None) -> dict[str, str]:
    """Return command name → ``module:attr`` of the ``hermes.early`` group (hermes_cli/early.py).

    :param path: the directories to read (``sys.path`` when omitted: the scan the plugin
        selection uses next, so the files are read once per process).
    """
    return _scan_path(tuple(sys.path if path is None else path)).early


def installed_plugins() -> dict[str, str]:
    """Return entry-point name → distribution name for the ``hermes.plugins`` group.

    Only package metadata is read; nothing is imported.
    """
    return {name: found[0] for name, found in _scan().found.items()}


def plugin_fingerprints() -> dict[str, str]:
    """Return entry-point name → a text that changes when the plugin is reinstalled or moved.

    It names the metadata directory, the modification time of its ``entry_points.txt`` and the
    entry point's target; :mod:`hermes_cli.command_cache` keys what it remembers by it.
    """
    return {name: found[1] for name, found in _scan().found.items()}


def plugin_sources() -> dict[str, EntryPointSource]:
    """Return entry-point name → what ``Kernel.create(discovered=...)`` imports for it.

    The kernel then loads the selected plugins from these rows instead of reading the package
    metadata again through ``importlib.metadata`` and stevedore, which costs more than the rest
    of the plugin loading on a command's start-up.
    """
    from hermes_core.loader import EntryPointSource

    return {
        name: EntryPointSource(name, value, dist, version)
        for name, (dist, _, value, version) in _scan().found.items()
    }
