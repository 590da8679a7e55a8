"""Small request helpers: JSON bodies, booleans, session headers, idempotency keys
(docs/reference/api-server.md#limits-idempotency-and-extra-fields, #session-headers)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from typing import Any

from aiohttp import web

from hermes_api_server.errors import ApiError, invalid
from hermes_api_server.state import get_state

ID_RE = re.compile(r"^[A-Za-z0-9_:.\-]{1,256}$")
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
IDEMPOTENCY_RE = re.compile(r"^[\x21-\x7e]{1,255}$")
TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
# Deeper bodies are refused: no request shape needs more, and encoding or walking one later
# (idempotency fingerprints, content conversion) must never run out of stack.
MAX_JSON_DEPTH = 64
FALSE_WORDS = frozenset({"false", "0", "no", "off"})


async def read_json(request: web.Request) -> dict[str, Any]:
    """Read the body as a JSON object, within ``body_timeout_s``.

    :raises ApiError: 413 over the body cap, 408 ``request_timeout`` for a body that stalls,
        400 ``invalid_json`` otherwise.
    """
    limit = get_state(request).settings.body_timeout_s
    try:
        if request.content.is_eof():
            # The whole body has arrived (as for most requests): reading it cannot stall, so it
            # needs no timer (arming and cancelling one per request showed in a c=50 burst).
            raw = await request.read()
        else:
            async with asyncio.timeout(limit):
                raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise ApiError(413, "body_too_large", "Request body is too large") from None
    except TimeoutError:
        # The rest of the body is not waited for: the answer closes the connection.
        raise ApiError(
            408, "request_timeout", f"The request body did not arrive within {limit:g} s"
        ) from None
    try:
        value = _DECODER.decode(raw.decode(json.detect_encoding(raw)))  # strict: no raw surrogates
    except RecursionError:
        raise _too_deep() from None
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "invalid_json", "The request body is not valid JSON") from None
    if not isinstance(value, dict):
        raise ApiError(400, "invalid_json", "The request body must be a JSON object")
    # Fewer brackets than the limit cannot nest past it: ordinary bodies skip the walk.
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and json_depth(value) > MAX_JSON_DEPTH:
        raise _too_deep()
    if SURROGATE_ESCAPE.search(raw) and _holds_lone_surrogate(value):
        raise ApiError(
            400,
            "invalid_json",
            "The request body holds a lone surrogate escape (\\ud800-\\udfff without its pair)",
        )
    return value


def _too_deep() -> ApiError:
    # Made only when raised: building an exception for every request showed in the profile.
    return ApiError(400, "invalid_json", f"The request body is nested deeper than {MAX_JSON_DEPTH} levels")


def _reject_constant(name: str) -> Any:
    # NaN / Infinity / -Infinity are Python extensions, not JSON.
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
# A \uD800-\uDFFF escape: only a valid pair of them makes a character, which UTF-8 can hold.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _holds_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def json_depth(value: Any) -> int:
    """Return how deeply objects and arrays nest in a decoded JSON value (a scalar is 0).

    Iterative, so that it never recurses however deep the value is.
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def parse_bool(value: Any, param: str, default: bool = False) -> bool:
    """Accept a JSON bool or the strings true/1/yes/on and false/0/no/off."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS:
        return True
    if isinstance(value, str) and value.strip().lower() in FALSE_WORDS:
        return False
    raise invalid(f"{param} must be a boolean", param)


def strict_bool(value: Any, param: str, default: bool) -> bool:
    """Accept only a JSON bool (or absence)."""
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid(f"{param} must be a boolean", param)
    return value


def check_session_id(value: Any, param: str) -> str:
    """Validate a session id against the core grammar."""
    if not isinstance(value, str) or not ID_RE.match(value) or value in (".", ".."):
        raise ApiError(
            400,
            "invalid_session_id",
            "Session ids are 1-256 characters of A-Z a-z 0-9 _ : . - (not '.' or '..')",
            param=param,
        )
    return value


def header_session_id(request: web.Request) -> str | None:
    """Return a validated ``X-Hermes-Session-Id``, or None when absent or empty."""
    value = request.headers.get("X-Hermes-Session-Id", "")
    return check_session_id(value, "X-Hermes-Session-Id") if value else None


def header_session_key(request: web.Request) -> str | None:
    """Return a validated ``X-Hermes-Session-Key`` (a channel key), or None."""
    value = request.headers.get("X-Hermes-Session-Key", "")
    if not value:
        return None
    if len(value) > 256 or CONTROL_RE.search(value):
        raise ApiError(
            400,
            "invalid_session_key",
            "X-Hermes-Session-Key must be 1-256 characters without control characters",
            param="X-Hermes-Session-Key",
        )
    return value


def idempotency_key(request: web.Request) -> str | None:
    """Return a validated ``Idempotency-Key``, or None."""
    value = request.headers.get("Idempotency-Key")
    if value is None:
        return None
    if not IDEMPOTENCY_RE.match(value):
        raise ApiError(
            400,
            "invalid_idempotency_key",
            "Idempotency-Key must be 1-255 visible ASCII characters",
            param="Idempotency-Key",
        )
    return value


def check_metadata(value: Any) -> dict[str, str]:
    """Validate ``metadata``: an object of at most 16 string values."""
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > 16:
        raise invalid("metadata must be an object of at most 16 string values", "metadata")
    for key, item in value.items():
        if not isinstance(item, str) or not isinstance(key, str):
            raise invalid("metadata values must be strings", "metadata")
    return dict(value)


def fingerprint(value: Any) -> str:
    """Return the sha256 of the canonical JSON of ``value``."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def session_headers(session_id: str, session_key: str | None, model: str | None) -> dict[str, str]:
    """Return the echo headers of an agent response.

    Every value was validated when the request came in; one that still holds a control character
    (a stored model reference, say) is left out rather than failing a response already decided.
    """
    headers = {"X-Hermes-Session-Id": session_id}
    if session_key:
        headers["X-Hermes-Session-Key"] = session_key
    if model:
        headers["X-Hermes-Model"] = model
    return {name: value for name, value in headers.items() if not CONTROL_RE.search(value)}
