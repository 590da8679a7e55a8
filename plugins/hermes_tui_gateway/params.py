"""Read request params the TUI way: unknown keys ignored, wrong types answered with -32602.

Every helper raises :class:`hermes_core.rpc.RpcError`, which the peer turns into the error
response; ``data`` is ``{param, expected}`` (docs/reference/tui-gateway.md#message-shapes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_core import WorkspaceError, WorkspaceProblem, check_workspace, rpc

_MISSING: Any = object()


#: Characters replaced by ``_`` when a session id becomes a file or folder name.
SAFE_NAME = re.compile(r"[^A-Za-z0-9_.\-]")


class GatewayError(rpc.RpcError):
    """A 4xxx/5xxx error of one method (codes are per method, docs/reference/tui-gateway.md#error-codes)."""


def bad(name: str, expected: str) -> rpc.RpcError:
    """Return the -32602 for one parameter.

    :param name: the parameter.
    :param expected: what it should have been.
    :returns: the error to raise.
    """
    return rpc.RpcError(rpc.INVALID_PARAMS, "invalid params", {"param": name, "expected": expected})


def opt_str(p: Mapping[str, Any], name: str, default: str | None = None) -> str | None:
    """Return an optional string param (``null`` counts as absent)."""
    value = p.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise bad(name, "string")
    return value


def req_str(p: Mapping[str, Any], name: str) -> str:
    """Return a required string param."""
    value = p.get(name, _MISSING)
    if value is _MISSING or not isinstance(value, str):
        raise bad(name, "string")
    return value


def opt_int(p: Mapping[str, Any], name: str, default: int | None = None) -> int | None:
    """Return an optional integer param (booleans are not integers)."""
    value = p.get(name)
    if value is None:
        return default
    if type(value) is not int:
        raise bad(name, "integer")
    return value


def opt_bool(p: Mapping[str, Any], name: str, default: bool = False) -> bool:
    """Return an optional boolean param."""
    value = p.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad(name, "boolean")
    return value


def truthy(value: Any) -> bool:
    """Tell whether a flag is on: JSON true or ``1``/``true``/``yes``/``on`` (any case)."""
    if value is True:
        return True
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return type(value) is int and value == 1


def clamp(value: int, low: int, high: int) -> int:
    """Clamp an integer into ``[low, high]``."""
    return max(low, min(high, value))


def session_id(p: Mapping[str, Any]) -> str:
    """Return the ``session_id`` param (a string; empty when missing)."""
    value = p.get("session_id")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise bad("session_id", "string")
    return value


def workspace(value: str, shown: Any) -> Path:
    """Return a requested folder made absolute (``~`` expanded, relative to the gateway's folder).

    :raises GatewayError: 4017 ``invalid cwd`` when it is not an existing directory; 4002 when it
        is no path at all (a NUL character).
    """
    try:
        return check_workspace(value, expand_user=True, relative_to=Path.cwd(), resolve=False)
    except WorkspaceError as exc:
        if exc.problem is WorkspaceProblem.NOT_A_PATH:
            raise GatewayError(4002, str(exc), {"key": "cwd"}) from None
        raise GatewayError(4017, f"invalid cwd: {shown}") from None
