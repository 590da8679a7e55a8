"""Which entry-point plugins to load: ``HERMES_PLUGINS`` / ``HERMES_DISABLE_PLUGINS``, the
``--plugin`` / ``--with-plugin`` / ``--no-plugin`` flags, ``HERMES_STRICT_PLUGINS`` and
``HERMES_TRACE_PLUGINS`` (docs/reference/core.md#settings, docs/writing-plugins.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

STRICT_VALUES = frozenset({"1", "true", "yes"})


@dataclass(slots=True)
class PluginSelection:
    """The arguments for ``Kernel.create`` and the warnings met on the way.

    :param entry_points: True for every installed plugin, else the names to load.
    """

    entry_points: bool | list[str]
    strict: bool
    warnings: list[str] = field(default_factory=list)
    trace: bool = False


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def parse_strict(value: str | None, warnings: list[str]) -> bool:
    """Read ``HERMES_STRICT_PLUGINS``: 1/true/yes in any case is on, anything else non-empty warns."""
    return _parse_switch("HERMES_STRICT_PLUGINS", value, "strict plugin loading", warnings)


def _parse_switch(variable: str, value: str | None, what: str, warnings: list[str]) -> bool:
    if value is None or not value.strip():
        return False
    if value.strip().lower() in STRICT_VALUES:
        return True
    warnings.append(f"{variable}={value!r} is not 1, true or yes; {what} stays off")
    return False


def select_plugins(
    env: Mapping[str, str],
    installed: Iterable[str],
    allow_flags: Sequence[str] = (),
    deny_flags: Sequence[str] = (),
    add_flags: Sequence[str] = (),
) -> PluginSelection:
    """Combine the environment and flags into the plugins to load.

    ``--plugin`` flags replace ``HERMES_PLUGINS`` (an allowlist; ``""`` means none);
    ``--with-plugin`` flags add to whichever set that leaves (every installed plugin when there is
    no allowlist); the disable list (``HERMES_DISABLE_PLUGINS`` plus ``--no-plugin``) applies
    last. Unknown names warn and are ignored.

    :param env: the environment (real over ``.env``).
    :param installed: the installed entry-point names.
    """
    names = sorted(set(installed))
    known = set(names)
    warnings: list[str] = []
    strict = parse_strict(env.get("HERMES_STRICT_PLUGINS"), warnings)
    trace = _parse_switch("HERMES_TRACE_PLUGINS", env.get("HERMES_TRACE_PLUGINS"), "hook tracing", warnings)
    allow: list[str] | None
    if allow_flags:
        allow, allow_source = list(allow_flags), "--plugin"
    elif "HERMES_PLUGINS" in env:
        allow, allow_source = _split(env["HERMES_PLUGINS"]), "HERMES_PLUGINS"
    else:
        allow, allow_source = None, ""
    if allow is not None and add_flags:
        allow, allow_source = [*allow, *add_flags], f"{allow_source} or --with-plugin"
    elif add_flags:
        for name in add_flags:
            if name not in known:
                installed_list = ", ".join(names) or "none"
                warnings.append(f"unknown plugin {name!r} in --with-plugin (installed: {installed_list})")
    deny = [(n, "HERMES_DISABLE_PLUGINS") for n in _split(env.get("HERMES_DISABLE_PLUGINS", ""))]
    deny += [(n, "--no-plugin") for n in deny_flags]
    installed_text = ", ".join(names) or "none"
    for name in allow or ():
        if name not in known:
            warnings.append(f"unknown plugin {name!r} in {allow_source} (installed: {installed_text})")
    for name, source in deny:
        if name not in known:
            warnings.append(f"unknown plugin {name!r} in {source} (installed: {installed_text})")
    denied = {n for n, _ in deny}
    if allow is None and not denied:
        return PluginSelection(True, strict, warnings, trace)
    base = names if allow is None else [n for n in dict.fromkeys(allow) if n in known]
    return PluginSelection([n for n in base if n not in denied], strict, warnings, trace)
