"""The kernel's NDJSON JSON-RPC peer, shared by the stdio transports (TUI gateway and ACP).

It knows no protocol's methods. It frames lines, validates the JSON-RPC envelope, hands each
request to an injected ``dispatch`` coroutine on its own task (after optional synchronous
``fast_path`` and ``prepare`` hooks), writes every frame through one FIFO writer, correlates
responses to its own outbound requests, and can protect stdout so only frames reach it.

Typical stdio use::

    guard = rpc.protect_stdout("stderr")
    peer = rpc.RpcPeer(reader=0, writer=guard.frame_fd, dispatch=dispatch, options=rpc.TUI_OPTIONS)
    peer.notify("event", {...})          # written before stdin is read
    reason = await peer.run()            # "eof" or "output_lost"
    ...                                  # graceful shutdown
    await peer.aclose()

Inbound flow per line: too long -> ``-32600``; not UTF-8 / not JSON -> ``-32700``; not an object
(batches included) -> ``-32600``; a ``result``/``error`` without ``method`` -> outbound
correlator; bad ``id`` / ``jsonrpc`` / ``method`` -> ``-32600``; ``params`` null or missing ->
``{}``, not an object -> ``-32602``. Then, with :func:`current_request` set: ``fast_path(msg)``
(a response returned here is sent at once), else ``prepare(msg)``, then ``dispatch(msg)`` on a
new task. All of this happens before the next line is looked at. Raising :class:`RpcError`
from any of the three answers with that error; any other exception becomes ``-32603`` with a
logged error id. Notifications never get a response.

Frame hook: ``peer.arm_frame_hook(hook)`` passes every frame sent from then on through a
:class:`FrameHook` just before it is written (withhold it, write it twice, hold it back); frames
sent before are untouched. ``hermes acp`` arms a scenario's faults this way once the kernel is
ready, since its writer starts before the model is known.

After-response hooks: inside any of the three, ``rpc.after_response(cb)`` (same as
``peer.after_response`` and ``rpc.current_request().after_response``) runs ``cb()`` right after
that request's response is enqueued, in registration order, so frames it sends follow the
response on the wire.

Output: frames are encoded when enqueued (compact, ``ensure_ascii=False``, ``allow_nan=False``;
an unserialisable response becomes ``-32603``, an unserialisable event is logged and dropped)
and written in FIFO order by one writer; frames queued together go out in one write, whole.

The framing pieces under the peer are public too, for a stdio transport whose protocol is not
JSON-RPC (``hermes pi`` speaks pi's JSONL): :class:`LineSplitter` cuts a byte stream into lines
at ``\\n`` only, :func:`decode_line` parses one line strictly, and :class:`Outbox` is the single
FIFO writer with flush and drain waits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core.rpc._calls import (
        AfterResponse,
        CloseReason,
        Dispatch,
        FastPath,
        OutboundRequest,
        Prepare,
        RequestContext,
        after_response,
        current_request,
    )
    from hermes_core.rpc._io import ChunkReader, FdReader, FrameHook, FrameWriter
    from hermes_core.rpc._outbox import Outbox
    from hermes_core.rpc._peer import RpcPeer
from hermes_core.rpc._stdout import ProtectedStdout, protect_stdout
from hermes_core.rpc._wire import (
    ACP_OPTIONS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MIB,
    PARSE_ERROR,
    SERVER_ERROR,
    TUI_OPTIONS,
    LineSplitter,
    PeerClosedError,
    PeerOptions,
    RpcError,
    RpcTimeout,
    decode_line,
    encode_frame,
    error_response,
    result_response,
)

__all__ = [
    "ACP_OPTIONS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MIB",
    "PARSE_ERROR",
    "SERVER_ERROR",
    "TUI_OPTIONS",
    "AfterResponse",
    "ChunkReader",
    "CloseReason",
    "Dispatch",
    "FastPath",
    "FdReader",
    "FrameHook",
    "FrameWriter",
    "LineSplitter",
    "OutboundRequest",
    "Outbox",
    "PeerClosedError",
    "PeerOptions",
    "Prepare",
    "ProtectedStdout",
    "RequestContext",
    "RpcError",
    "RpcPeer",
    "RpcTimeout",
    "after_response",
    "current_request",
    "decode_line",
    "encode_frame",
    "error_response",
    "protect_stdout",
    "result_response",
]

# The peer, its reader and the call context need asyncio; the wire constants, errors and the
# stdout guard do not. Keeping the former lazy lets a transport answer its handshake before
# asyncio is imported (docs/reference/acp.md#start-up).
_LAZY = {
    "AfterResponse": "hermes_core.rpc._calls",
    "CloseReason": "hermes_core.rpc._calls",
    "Dispatch": "hermes_core.rpc._calls",
    "FastPath": "hermes_core.rpc._calls",
    "OutboundRequest": "hermes_core.rpc._calls",
    "Prepare": "hermes_core.rpc._calls",
    "RequestContext": "hermes_core.rpc._calls",
    "after_response": "hermes_core.rpc._calls",
    "current_request": "hermes_core.rpc._calls",
    "ChunkReader": "hermes_core.rpc._io",
    "FdReader": "hermes_core.rpc._io",
    "FrameHook": "hermes_core.rpc._io",
    "FrameWriter": "hermes_core.rpc._io",
    "Outbox": "hermes_core.rpc._outbox",
    "RpcPeer": "hermes_core.rpc._peer",
}


def __getattr__(name: str) -> Any:
    """Import a heavy public name on first use.

    :param name: the attribute asked for.
    :returns: its value.
    :raises AttributeError: not a name of this module.
    """
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
