"""Envelope rules of the JSON-RPC peer: checking inbound requests and shaping outgoing responses.

Pure functions, so the peer's event handling stays about ordering and tasks, and the rules of
docs/reference/tui-gateway.md#message-shapes, #malformed-input and
docs/reference/acp.md#inbound-dispatch, #error-codes can be read in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hermes_core.rpc._wire import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    SERVER_ERROR,
    PeerOptions,
    RpcError,
    error_response,
    result_response,
    valid_id,
)

_MISSING = object()


def check_request(message: dict[str, Any], options: PeerOptions) -> tuple[Any, RpcError | None]:
    """Validate a request or notification envelope and normalise it in place.

    Adds ``"jsonrpc": "2.0"`` when it may be omitted, and turns a missing or null ``params``
    into ``{}`` (``jsonrpcserver`` 5.0.9 rejects null params and loses the id).

    :param message: a decoded JSON object with a ``method`` member or no result/error.
    :param options: the transport's rules.
    :returns: the id to echo in an error (``None`` when unreadable) and the error, or ``None``
        when the envelope is acceptable.
    """
    request_id = message.get("id")
    if not valid_id(request_id):
        return None, options.error(INVALID_REQUEST)
    version = message.get("jsonrpc", _MISSING)
    if version is _MISSING:
        if options.jsonrpc_required:
            return request_id, options.error(INVALID_REQUEST)
        message["jsonrpc"] = "2.0"
    elif version != "2.0":
        return request_id, options.error(INVALID_REQUEST)
    method = message.get("method")
    if type(method) is not str or not method:
        return request_id, options.error(INVALID_REQUEST)
    params = message.get("params")
    if params is None:
        message["params"] = {}
    elif type(params) is not dict:
        return request_id, options.invalid_params("params", "object")
    return request_id, None


def response_frame(
    request_id: Any,
    response: Mapping[str, Any] | None,
    options: PeerOptions,
    internal: Callable[[str], RpcError],
) -> dict[str, Any]:
    """Turn what a handler returned into the response frame for ``request_id``.

    ``jsonrpc`` and ``id`` are always set by the peer (ids echo with their JSON type whatever the
    handler put there). A malformed answer, or ``-32000 "Server error"`` when
    ``options.rewrite_server_error`` is set, becomes ``-32603`` through ``internal``.

    :param request_id: the id of the request being answered.
    :param response: ``{"result": ...}`` or ``{"error": {code, message, data?}}`` (extra keys
        ignored), or anything else (treated as a handler bug).
    :param options: the transport's rules.
    :param internal: logs a problem under a fresh error id and returns the ``-32603`` to send.
    :returns: the frame to encode.
    """
    if isinstance(response, Mapping):
        if "error" in response:
            error = response["error"]
            if (
                isinstance(error, Mapping)
                and type(error.get("code")) is int
                and isinstance(error.get("message"), str)
            ):
                if (
                    options.rewrite_server_error
                    and error["code"] == SERVER_ERROR
                    and error["message"] == "Server error"
                ):
                    return error_response(
                        request_id, internal(f"dispatcher server error: {error.get('data')!r}")
                    )
                return {"jsonrpc": "2.0", "id": request_id, "error": dict(error)}
        elif "result" in response:
            return result_response(request_id, response["result"])
    return error_response(request_id, internal(f"dispatch gave no valid response: {response!r:.200}"))


def error_from_wire(error: Any) -> RpcError:
    """Build the exception for an error response to one of our requests.

    :param error: the ``error`` member as received.
    :returns: an :class:`RpcError`; a malformed member still yields one (code ``-32603``).
    """
    if isinstance(error, dict):
        code = error.get("code")
        message = error.get("message")
        return RpcError(
            code if type(code) is int else INTERNAL_ERROR,
            message if isinstance(message, str) else "error",
            error.get("data"),
        )
    return RpcError(INTERNAL_ERROR, "malformed error response", error)
