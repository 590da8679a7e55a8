"""Unknown keys in a parsed ``config.toml``: one warning line each, with a suggestion."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_cli.keys import resolve_key
from hermes_core.errors import ConfigError

if TYPE_CHECKING:
    from hermes_core.registry import Registry


def config_warnings(config: dict[str, Any], registry: Registry | None, *, tables: bool = True) -> list[str]:
    """Return one line per unknown key in a parsed ``config.toml``, with a suggestion.

    Unknown top-level keys are otherwise silently ignored (the core keeps unknown tables for
    transports), and unknown keys inside a section fail without naming the likely intent.

    :param tables: also report unknown top-level tables; pass False when some installed
        plugin is not loaded (the table may be its section).
    """
    found: list[str] = []

    def walk(table: dict[str, Any], prefix: str) -> None:
        for name, value in table.items():
            key = f"{prefix}{name}"
            try:
                info = resolve_key(key, registry)
            except ConfigError as exc:
                skip = not tables and not prefix and isinstance(value, dict)
                if str(exc).startswith("unknown key") and not skip:
                    found.append(str(exc))
                continue
            if isinstance(value, dict) and info.expected == "a table":
                walk(value, f"{key}.")

    walk(config, "")
    return found
