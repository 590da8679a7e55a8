"""Wire pieces of the NDJSON JSON-RPC peer: codes, typed errors, per-transport options, framing.

Everything here is pure (no I/O, no event loop), so the peer in :mod:`hermes_core.rpc` and the
transports built on it share one definition of what goes on the wire.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
SERVER_ERROR: Final = -32000

MIB: Final = 1 << 20

#: Marker the line splitter yields in place of a line longer than the cap.
OVERSIZED: Final = None


class RpcError(Exception):
    """A JSON-RPC error object carried as an exception.

    Raised by :meth:`RpcPeer.request` when the other side answers with an error, and accepted from
    ``dispatch`` / ``fast_path`` / ``prepare``: raising it answers the request with exactly this
    error object.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        """Build the error.

        :param code: the JSON-RPC error code.
        :param message: the human-readable message.
        :param data: the optional ``data`` member; ``None`` leaves it out of the wire object.
        """
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """Return the wire error object ``{code, message, data?}``.

        :returns: a new dict, ``data`` present only when not ``None``.
        """
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __repr__(self) -> str:
        return f"RpcError(code={self.code!r}, message={self.message!r}, data={self.data!r})"


class RpcTimeout(TimeoutError):
    """An outbound request got no response in time; it is no longer pending.

    A subclass of :class:`TimeoutError`, so ``except asyncio.TimeoutError`` catches it too.
    """

    def __init__(self, method: str, request_id: int, timeout: float) -> None:
        """Build the error.

        :param method: the method of the request that timed out.
        :param request_id: its id, e.g. for a follow-up cancel notification.
        :param timeout: the timeout in seconds that expired.
        """
        super().__init__(f"no response to {method} (id {request_id}) within {timeout:g} s")
        self.method = method
        self.request_id = request_id
        self.timeout = timeout


class PeerClosedError(ConnectionError):
    """The peer can no longer exchange messages (input ended, output lost, or it was closed)."""


_TUI_MESSAGES: Final[Mapping[int, str]] = {
    PARSE_ERROR: "parse error",
    INVALID_REQUEST: "invalid request",
    METHOD_NOT_FOUND: "unknown method",
    INVALID_PARAMS: "invalid params",
    INTERNAL_ERROR: "internal error",
}

_ACP_MESSAGES: Final[Mapping[int, str]] = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}


@dataclass(frozen=True, slots=True)
class PeerOptions:
    """How one transport wants the shared peer to behave (the table in both stdio contracts).

    :param name: short transport name used in log lines (``"tui"``, ``"acp"``).
    :param max_line_bytes: inbound line cap; a longer line is discarded up to its newline and
        answered ``-32600`` with the too-large message and ``id: null``.
    :param jsonrpc_required: ``True`` (ACP): a request without ``"jsonrpc"`` gets ``-32600``.
        ``False`` (TUI): it may be omitted and the peer adds ``"2.0"``. When present it must
        be ``"2.0"`` either way.
    :param invalid_params_style: ``"param_expected"`` gives ``-32602`` data ``{param, expected}``
        (TUI); ``"field"`` gives ``{field}`` and names the problem in the message (ACP).
    :param internal_error_key: the key of the error id in ``-32603`` data (``error_id`` /
        ``errorId``).
    :param rewrite_server_error: turn a dispatch answer of ``-32000 "Server error"`` (what
        ``jsonrpcserver`` says when a handler escapes it) into ``-32603`` with an error id, so
        exception text never reaches the wire.
    :param messages: the message used for each standard code the peer itself produces.
    :param too_large_message: the message of the line-cap ``-32600``.
    :param read_chunk_bytes: how much the reader asks for per read.
    """

    name: str
    max_line_bytes: int
    jsonrpc_required: bool
    invalid_params_style: Literal["param_expected", "field"]
    internal_error_key: str
    rewrite_server_error: bool = True
    messages: Mapping[int, str] = field(default_factory=lambda: dict(_TUI_MESSAGES))
    too_large_message: str = "request too large"
    read_chunk_bytes: int = 256 * 1024

    def error(self, code: int, data: Any = None) -> RpcError:
        """Return the error for a standard code with this transport's message.

        :param code: a JSON-RPC code, normally one of the module constants.
        :param data: optional ``data`` member.
        :returns: the error, ready to raise or to turn into a wire object.
        """
        return RpcError(code, self.messages.get(code, "error"), data)

    def invalid_params(self, name: str, expected: str, problem: str | None = None) -> RpcError:
        """Return a ``-32602`` in this transport's style.

        :param name: the offending parameter (``"cwd"``, or ``"params"`` for the whole member).
        :param expected: what was expected, e.g. ``"object"``, ``"absolute path"``.
        :param problem: ACP-style detail for the message; defaults to "<name> must be <expected>".
        :returns: TUI: message as configured, data ``{param, expected}``; ACP: message
            ``"Invalid params: <problem>"``, data ``{field}``.
        """
        base = self.messages.get(INVALID_PARAMS, "invalid params")
        if self.invalid_params_style == "field":
            detail = problem or f"{name} must be {expected}"
            return RpcError(INVALID_PARAMS, f"{base}: {detail}", {"field": name})
        return RpcError(INVALID_PARAMS, base, {"param": name, "expected": expected})

    def internal_error(self, error_id: str) -> RpcError:
        """Return a ``-32603`` whose data names the logged error id.

        :param error_id: the id under which the traceback was logged.
        :returns: the error with data ``{<internal_error_key>: error_id}``.
        """
        return RpcError(
            INTERNAL_ERROR,
            self.messages.get(INTERNAL_ERROR, "internal error"),
            {self.internal_error_key: error_id},
        )


#: `hermes tui` over stdio (docs/reference/tui-gateway.md#per-transport-options).
TUI_OPTIONS: Final = PeerOptions(
    name="tui",
    max_line_bytes=8 * MIB,
    jsonrpc_required=False,
    invalid_params_style="param_expected",
    internal_error_key="error_id",
    messages=_TUI_MESSAGES,
)

#: `hermes acp` (docs/reference/acp.md#json-rpc).
ACP_OPTIONS: Final = PeerOptions(
    name="acp",
    max_line_bytes=64 * MIB,
    jsonrpc_required=True,
    invalid_params_style="field",
    internal_error_key="errorId",
    messages=_ACP_MESSAGES,
)


_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode_frame(obj: Any) -> bytes:
    """Serialise one frame: compact UTF-8 JSON plus ``"\\n"``.

    A lone surrogate in a string (possible after decoding a ``"\\ud800"`` escape) is written back
    as the same ``\\uXXXX`` escape, so the output is always valid UTF-8 and valid JSON.

    :param obj: the JSON value to send.
    :returns: the frame bytes, with exactly one newline, at the end.
    :raises ValueError: NaN/Infinity or a circular structure.
    :raises TypeError: a value JSON cannot represent.
    :raises RecursionError: a structure nested too deeply.
    """
    return (_ENCODER.encode(obj) + "\n").encode("utf-8", "backslashreplace")


def _reject_constant(name: str) -> Any:
    # NaN / Infinity / -Infinity are Python extensions, not JSON: treat them as a parse error.
    raise ValueError(f"{name} is not valid JSON")


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


# A ``\\uD800``-``\\uDFFF`` escape: only a valid pair of them makes a character.
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F]")


def decode_line(line: bytes) -> Any:
    """Parse one inbound line strictly (UTF-8 only, no NaN/Infinity, no lone surrogates).

    A lone surrogate (``"\\ud800"`` without its pair) is no character: text holding one could
    not be stored or sent on, so the line is refused like any other that is not JSON text.

    :param line: the line without its newline.
    :returns: the decoded JSON value.
    :raises ValueError: not UTF-8 (``UnicodeDecodeError``), not JSON, or a lone surrogate.
    :raises RecursionError: nesting too deep to parse.
    """
    value = _DECODER.decode(line.decode("utf-8"))
    if _SURROGATE_ESCAPE.search(line):  # rare: only then is the decoded value checked
        try:
            _ENCODER.encode(value).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a lone surrogate is not valid JSON text") from None
    return value


class LineSplitter:
    """Cut a byte stream into NDJSON lines, enforcing a line cap.

    Only ``b"\\n"`` ends a line (U+2028/U+2029 are data). Each line is stripped of surrounding
    whitespace (so a trailing ``\\r`` goes) and blank lines are skipped. A line longer than the
    cap is dropped without being buffered and reported as :data:`OVERSIZED` (``None``) once its
    newline (or the end of input) is reached.
    """

    __slots__ = ("_buf", "_discarding", "_max")

    def __init__(self, max_line_bytes: int) -> None:
        """Create an empty splitter.

        :param max_line_bytes: the longest accepted line, newline excluded.
        """
        self._max = max_line_bytes
        self._buf = bytearray()
        self._discarding = False

    def feed(self, chunk: bytes) -> list[bytes | None]:
        """Add a chunk and return the lines it completes, in order.

        :param chunk: the next bytes of the stream.
        :returns: stripped non-blank lines, with ``None`` in place of each oversized line.
        """
        out: list[bytes | None] = []
        size = len(chunk)
        start = 0
        if self._discarding:
            newline = chunk.find(b"\n")
            if newline < 0:
                return out
            self._discarding = False
            out.append(OVERSIZED)
            start = newline + 1
        elif self._buf:
            newline = chunk.find(b"\n")
            if newline < 0:
                if len(self._buf) + size > self._max:
                    self._buf.clear()
                    self._discarding = True
                else:
                    self._buf += chunk
                return out
            self._buf += memoryview(chunk)[:newline]
            line = bytes(self._buf)
            self._buf.clear()
            self._emit(line, out)
            start = newline + 1
        find = chunk.find
        while start < size:
            newline = find(b"\n", start)
            if newline < 0:
                if size - start > self._max:
                    self._discarding = True
                else:
                    self._buf += memoryview(chunk)[start:]
                break
            self._emit(chunk[start:newline], out)
            start = newline + 1
        return out

    def finish(self) -> list[bytes | None]:
        """Flush at end of input: an unterminated last line still counts.

        :returns: the last line (or ``None`` if it was oversized), or nothing.
        """
        out: list[bytes | None] = []
        if self._discarding:
            self._discarding = False
            out.append(OVERSIZED)
        elif self._buf:
            line = bytes(self._buf)
            self._buf.clear()
            self._emit(line, out)
        return out

    def _emit(self, line: bytes, out: list[bytes | None]) -> None:
        if len(line) > self._max:
            out.append(OVERSIZED)
            return
        stripped = line.strip()
        if stripped:
            out.append(stripped)


def result_response(request_id: Any, result: Any) -> dict[str, Any]:
    """Build a success response.

    :param request_id: the id to echo.
    :param result: the result value.
    :returns: ``{"jsonrpc": "2.0", "id": ..., "result": ...}``.
    """
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: Any, error: RpcError) -> dict[str, Any]:
    """Build an error response.

    :param request_id: the id to echo (``None`` when unreadable).
    :param error: the error to send.
    :returns: ``{"jsonrpc": "2.0", "id": ..., "error": {code, message, data?}}``.
    """
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_error()}


def valid_id(value: Any) -> bool:
    """Tell whether a value may be a JSON-RPC id (string, finite number or null; not a boolean).

    A number too large for a float (``1e400``) parses as infinity, which cannot be written back
    as JSON, so such an id could never be answered: it is refused like any other bad id.

    :param value: the decoded ``id`` member.
    :returns: ``True`` if it can be echoed back as an id.
    """
    if value is None or (isinstance(value, str | int) and not isinstance(value, bool)):
        return True
    return isinstance(value, float) and math.isfinite(value)
