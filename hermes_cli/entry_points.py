"""The installed ``hermes.plugins`` entry-point names, read without importing any plugin.

``hermes --help`` has a 100 ms budget and ``importlib.metadata`` alone costs about a third of
it (it imports ``email``, ``zipfile``, ``csv``…), so the common case — distributions unpacked in
directories on ``sys.path`` — is read straight from their ``entry_points.txt`` files, with the same
rule as ``importlib.metadata`` (the first distribution of a name on ``sys.path`` wins). Zipped
path entries fall back to ``importlib.metadata``.
"""

from __future__ import annotations

import os
import re
import sys

GROUP = "hermes.plugins"
_META_SUFFIXES = (".dist-info", ".egg-info")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _section_entries(text: str, section: str) -> list[str]:
    """Return the entry names of one ``[section]`` of an ``entry_points.txt``."""
    names: list[str] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == section
            continue
        if inside and "=" in line:
            names.append(line.split("=", 1)[0].strip())
    return names


def _dist_name(meta_dir: str, fallback: str) -> str:
    """Read ``Name:`` from a distribution's metadata headers."""
    for filename in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(meta_dir, filename), encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith("Name:"):
                        return line[5:].strip()
                    if not line.strip():
                        break
        except OSError:
            continue
    return fallback


def _scan_directories(paths: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
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
            try:
                with open(os.path.join(meta_dir, "entry_points.txt"), encoding="utf-8") as handle:
                    names = _section_entries(handle.read(), GROUP)
            except OSError:
                continue
            if names:
                dist = _dist_name(meta_dir, stem.split("-", 1)[0])
                for name in names:
                    found.setdefault(name, dist)
    return found


def _scan_metadata() -> dict[str, str]:
    from importlib import metadata

    found: dict[str, str] = {}
    for ep in metadata.entry_points(group=GROUP):
        dist = getattr(ep, "dist", None)
        found.setdefault(ep.name, getattr(dist, "name", None) or "?")
    return found


def installed_plugins() -> dict[str, str]:
    """Return entry-point name → distribution name for the ``hermes.plugins`` group.

    Only package metadata is read; nothing is imported.
    """
    paths = list(sys.path)
    if any(os.path.isfile(p) for p in paths if p):
        found = _scan_metadata()
    else:
        found = _scan_directories(paths)
    return dict(sorted(found.items()))
