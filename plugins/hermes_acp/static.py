"""The static ``initialize`` answer (docs/reference/acp.md#initialize), built without pydantic or
``jsonrpcserver``.

The peer answers ``initialize`` from here in its fast path, before the kernel has started, so
an IDE gets its reply as soon as the process can read a line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_core import SCHEMA_SHA256, SCHEMA_VERSION
from hermes_core.rpc import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from hermes_acp.wire_meta import HermesInitializeMeta

PROTOCOL_VERSION = 1

SETUP_METHOD = {
    "type": "terminal",
    "id": "hermes-setup",
    "name": "Set up Hermes in a terminal",
    "description": "Choose a provider, model and API key",
    "args": ["--setup"],
}
CONFIG_METHOD = {
    "id": "hermes-config",
    "name": "Use my Hermes configuration",
    "description": "Re-read the config file",
}
AUTH_METHOD_IDS = frozenset({"hermes-setup", "hermes-config"})


@dataclass(frozen=True, slots=True)
class ClientCaps:
    """What the client said it can do (only the parts Hermes uses).

    :param read_text_file: ``fs.readTextFile``.
    :param write_text_file: ``fs.writeTextFile``.
    :param auth_terminal: ``auth.terminal``.
    """

    read_text_file: bool = False
    write_text_file: bool = False
    auth_terminal: bool = False


def _flag(obj: Any, *keys: str) -> bool:
    for key in keys:
        if not isinstance(obj, dict):
            return False
        obj = obj.get(key)
    return obj is True


def parse_client_caps(params: dict[str, Any]) -> ClientCaps:
    """Read the client capabilities Hermes cares about; anything malformed counts as absent.

    :param params: the ``initialize`` params.
    :returns: the capabilities.
    """
    caps = params.get("clientCapabilities")
    return ClientCaps(
        read_text_file=_flag(caps, "fs", "readTextFile"),
        write_text_file=_flag(caps, "fs", "writeTextFile"),
        auth_terminal=_flag(caps, "auth", "terminal"),
    )


def mcp_http(loaded: bool | None = None) -> bool:
    """Whether HTTP MCP servers can be used: the ``mcp`` plugin is in use and its SDK installed.

    :param loaded: whether the plugin loaded (or, before plugins load, whether it is selected),
        when the caller knows; ``None`` checks only that it is installed. Nothing is imported.
    """
    from importlib.util import find_spec

    if loaded is None:
        loaded = find_spec("hermes_mcp") is not None
    return loaded and find_spec("mcp") is not None


def agent_capabilities(mcp_loaded: bool | None = None) -> dict[str, Any]:
    """Return the advertised ``agentCapabilities`` (a fresh dict).

    :param mcp_loaded: whether the ``mcp`` plugin loaded, when known (see :func:`mcp_http`).
    :returns: the capabilities object of docs/reference/acp.md#initialize.
    """
    return {
        "loadSession": True,
        "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
        "mcpCapabilities": {"http": mcp_http(mcp_loaded), "sse": False},
        "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "fork": {}},
    }


def initialize_result(
    params: dict[str, Any], version: str, *, mcp_loaded: bool | None = None
) -> tuple[dict[str, Any], ClientCaps]:
    """Check the ``initialize`` params and build the result.

    :param params: the request params (``{}`` when absent).
    :param version: the package version for ``agentInfo``.
    :param mcp_loaded: whether the ``mcp`` plugin loaded, once plugins are loaded.
    :returns: the result object and the parsed client capabilities.
    :raises RpcError: ``protocolVersion`` missing or not an integer (``-32602``).
    """
    requested = params.get("protocolVersion")
    if type(requested) is not int:
        raise RpcError(
            INVALID_PARAMS,
            "Invalid params: protocolVersion must be an integer",
            {"field": "protocolVersion"},
        )
    caps = parse_client_caps(params)
    methods: list[dict[str, Any]] = []
    if caps.auth_terminal:
        methods.append(dict(SETUP_METHOD, args=list(SETUP_METHOD["args"])))
    methods.append(dict(CONFIG_METHOD))
    meta: HermesInitializeMeta = {"hermes": {"schema": {"version": SCHEMA_VERSION, "sha256": SCHEMA_SHA256}}}
    result = {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": agent_capabilities(mcp_loaded),
        "authMethods": methods,
        "agentInfo": {"name": "hermes", "title": "Hermes", "version": version},
        "_meta": meta,
    }
    return result, caps


def split_initialize(data: bytes) -> tuple[dict[str, Any], bytes] | None:
    """Take a well-formed ``initialize`` request off the head of ``data``.

    Anything else (another method, a notification, a bad envelope, a partial or oversized line)
    gives ``None`` and is left for the peer, which applies every framing rule to it.

    :param data: bytes read from stdin before the peer started.
    :returns: the request (``params`` defaulted to ``{}``) and the bytes after its line.
    """
    import json

    line, newline, rest = data.partition(b"\n")
    if not newline or len(line) > 1 << 20:
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and message.get("method") == "initialize"
        and type(message.get("id")) in (int, str)
        and isinstance(message.get("params", {}), dict)
    ):
        return None
    message.setdefault("params", {})
    return message, rest


def initialize_frame(
    message: dict[str, Any], version: str, *, mcp_loaded: bool | None = None
) -> dict[str, Any]:
    """Build the whole response frame to an ``initialize`` request (result or ``-32602``).

    :param message: a request accepted by :func:`split_initialize`.
    :param version: the package version for ``agentInfo``.
    :param mcp_loaded: ``False`` when the ``mcp`` plugin is left out (see :func:`mcp_http`).
    :returns: the JSON-RPC response object.
    """
    try:
        result, _caps = initialize_result(message["params"], version, mcp_loaded=mcp_loaded)
    except RpcError as exc:
        return {"jsonrpc": "2.0", "id": message["id"], "error": exc.to_error()}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}
