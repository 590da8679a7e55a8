"""Read and write ``config.toml`` (tomllib in, tomli-w out, atomic, mode 0600)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from hermes_cli.atomic import write_private_atomic
from hermes_core.errors import ConfigError

_POSITION_RE = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_END_RE = re.compile(r"\s*\(at end of document\)\s*$")


class ConfigFileError(ConfigError):
    """``config.toml`` cannot be parsed; the message names the file and the line.

    :param path: the file.
    :param line: the 1-based line of the problem, or None (end of file, unreadable file).
    """

    def __init__(self, path: Path, reason: str, line: int | None = None) -> None:
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"malformed config file {where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


def read_config(path: Path) -> dict[str, Any]:
    """Parse ``config.toml``; a missing file is an empty table.

    :raises ConfigFileError: the file is not valid TOML or cannot be read.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigFileError(path, f"cannot read it: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigFileError(path, "not valid UTF-8", line) from exc
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = _POSITION_RE.search(message)
        if match:
            reason = message[: match.start()]
            raise ConfigFileError(path, reason, int(match.group(1))) from exc
        end = _END_RE.search(message)
        if end:
            reason = message[: end.start()]
            raise ConfigFileError(path, reason, text.count("\n") + 1) from exc
        raise ConfigFileError(path, message) from exc
    where = nul_key(parsed)
    if where is not None:
        # TOML can spell one (\u0000), but no path, URL or name can hold it: say so here rather
        # than fail deep inside whatever uses the value.
        raise ConfigFileError(path, f"{where} contains a NUL character")
    return parsed


def nul_key(value: Any, prefix: str = "") -> str | None:
    """Return the dotted key of the first text holding a NUL character, or None.

    :param value: a parsed table (or any value inside one).
    :param prefix: the key of ``value`` itself.
    """
    if isinstance(value, str):
        return (prefix or "value") if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            found = nul_key(item, f"{prefix}.{key}" if prefix else str(key))
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = nul_key(item, f"{prefix}[{index}]")
            if found is not None:
                return found
    return None


def write_config(path: Path, data: dict[str, Any]) -> None:
    """Write ``config.toml`` atomically with mode 0600."""
    import tomli_w

    write_private_atomic(path, tomli_w.dumps(data))


def get_dotted(data: dict[str, Any], key: str) -> Any:
    """Return the value at a dotted key of nested tables, or None when absent."""
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    """Set a dotted key in nested tables, creating tables on the way.

    :raises ConfigError: a parent of the key holds a value that is not a table.
    """
    parts = key.split(".")
    node = data
    for index, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            parent = ".".join(parts[: index + 1])
            raise ConfigError(f"cannot set {key}: {parent} is not a table in config.toml")
        node = child
    node[parts[-1]] = value
