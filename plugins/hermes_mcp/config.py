"""What one MCP server is: read from ``[mcp_servers.NAME]`` in config.toml or from ACP ``mcpServers``.

Pure data and validation; nothing here imports the SDK, so a bad entry is reported the same way
whether the ``mcp`` library is installed or not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_core import InvalidValue

Trust = Literal["full", "untrusted"]
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_CONNECT_TIMEOUT_S = 30.0
_KEYS = frozenset(
    {
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "timeout_s",
        "connect_timeout_s",
        "include",
        "exclude",
        "trust",
        "enabled",
    }
)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One server: a command to run (stdio) or a URL (streamable HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    trust: Trust = "untrusted"
    session_id: str | None = None  # set for a server an editor passed for one session

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def wants(self, tool: str) -> bool:
        """Whether the ``include`` / ``exclude`` lists let ``tool`` through."""
        if self.include is not None and tool not in self.include:
            return False
        return tool not in self.exclude


def _problem(where: str, text: str) -> InvalidValue:
    return InvalidValue(where, message=f"{where}: {text}")


def _no_nul(where: str, *texts: str) -> None:
    # A process argument, variable or path cannot hold one: the server could never start.
    if any("\x00" in t for t in texts):
        raise _problem(where, "must not contain a NUL character")


def _strings(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise _problem(where, "expected a list of strings")
    _no_nul(where, *value)
    return tuple(value)


def _table(where: str, value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise _problem(where, "expected a table of strings")
    _no_nul(where, *map(str, value), *value.values())
    return {str(k): v for k, v in value.items()}


def _seconds(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _problem(where, "expected a positive number of seconds")
    return float(value)


def check_name(where: str, name: Any) -> str:
    """Return a server name, or raise: letters, digits, ``_ . -``, at most 64 characters."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise _problem(
            where, "a server name is 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
        )
    return name


def from_table(name: str, table: Any) -> ServerConfig | None:
    """Build a server from its config.toml table; None when ``enabled = false``.

    :raises InvalidValue: naming the key at fault (``mcp_servers.NAME.key``).
    """
    where = f"mcp_servers.{name}"
    check_name(where, name)
    if not isinstance(table, Mapping):
        raise _problem(where, "expected a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise _problem(where, f"unknown key(s) {', '.join(unknown)}")
    if table.get("enabled", True) is False:
        return None
    command, url = table.get("command"), table.get("url")
    if (command is None) == (url is None):
        raise _problem(where, "give either command (stdio) or url (streamable HTTP)")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise _problem(f"{where}.command", "expected a non-empty string")
    if command is not None:
        _no_nul(f"{where}.command", command)
    if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
        raise _problem(f"{where}.url", "expected an http:// or https:// URL")
    trust = table.get("trust", "untrusted")
    if trust not in ("full", "untrusted"):
        raise _problem(f"{where}.trust", "expected 'full' or 'untrusted'")
    cwd = table.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise _problem(f"{where}.cwd", "expected a path")
    if cwd is not None:
        _no_nul(f"{where}.cwd", cwd)
    include = table.get("include")
    return ServerConfig(
        name=name,
        command=command,
        args=_strings(f"{where}.args", table.get("args", [])),
        env=_table(f"{where}.env", table.get("env", {})),
        cwd=cwd,
        url=url,
        headers=_table(f"{where}.headers", table.get("headers", {})),
        timeout_s=_seconds(f"{where}.timeout_s", table.get("timeout_s", DEFAULT_TIMEOUT_S)),
        connect_timeout_s=_seconds(
            f"{where}.connect_timeout_s", table.get("connect_timeout_s", DEFAULT_CONNECT_TIMEOUT_S)
        ),
        include=None if include is None else _strings(f"{where}.include", include),
        exclude=_strings(f"{where}.exclude", table.get("exclude", [])),
        trust=trust,
    )


def from_settings(section: Mapping[str, Any]) -> tuple[list[ServerConfig], list[str]]:
    """Read every ``[mcp_servers.NAME]`` table; a bad one is reported and left out, the rest load."""
    servers: list[ServerConfig] = []
    problems: list[str] = []
    for name, table in section.items():
        try:
            server = from_table(str(name), table)
        except InvalidValue as exc:
            problems.append(str(exc))
            continue
        if server is not None:
            servers.append(server)
    return servers, problems


def _pairs(where: str, value: Any) -> dict[str, str]:
    """ACP sends env and headers as ``[{name, value}]``."""
    if value is None:
        return {}
    if not isinstance(value, list):
        raise _problem(where, "expected a list of {name, value}")
    out: dict[str, str] = {}
    for item in value:
        if (
            not isinstance(item, Mapping)
            or not isinstance(item.get("name"), str)
            or not isinstance(item.get("value"), str)
        ):
            raise _problem(where, "expected a list of {name, value} strings")
        _no_nul(where, item["name"], item["value"])
        out[item["name"]] = item["value"]
    return out


def from_acp(
    entries: Sequence[Any], session_id: str, *, taken: frozenset[str] = frozenset()
) -> list[ServerConfig]:
    """Build the servers an editor passed in ``mcpServers`` (stdio, or ``type: "http"``).

    :param taken: names already in use (the configured servers): refused like duplicates.
    :raises InvalidValue: for a malformed entry, an unsupported type or a duplicate name.
    """
    out: list[ServerConfig] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"mcpServers[{index}]"
        if not isinstance(entry, Mapping):
            raise _problem(where, "expected an object")
        name = check_name(f"{where}.name", entry.get("name"))
        if name in seen:
            raise _problem(f"{where}.name", f"duplicate server name {name!r}")
        if name in taken:
            raise _problem(f"{where}.name", f"{name!r} is already the name of a server in config.toml")
        seen.add(name)
        kind = entry.get("type", "stdio")
        if kind == "stdio":
            command = entry.get("command")
            if not isinstance(command, str) or not command.strip():
                raise _problem(f"{where}.command", "expected a non-empty string")
            _no_nul(f"{where}.command", command)
            out.append(
                ServerConfig(
                    name=name,
                    command=command,
                    args=_strings(f"{where}.args", entry.get("args", [])),
                    env=_pairs(f"{where}.env", entry.get("env")),
                    session_id=session_id,
                )
            )
        elif kind == "http":
            url = entry.get("url")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise _problem(f"{where}.url", "expected an http:// or https:// URL")
            out.append(
                ServerConfig(
                    name=name,
                    url=url,
                    headers=_pairs(f"{where}.headers", entry.get("headers")),
                    session_id=session_id,
                )
            )
        else:
            raise _problem(f"{where}.type", f"unsupported MCP transport {kind!r} (supported: stdio, http)")
    return out
