"""The input items of a Responses request: kept with the stored response and listed, a page at a
time, by ``GET /v1/responses/{id}/input_items`` (docs/reference/api-server.md#input-items).

The items are the request's own ``input`` (not the instructions, not earlier responses of a
chain), in OpenAI's item shapes: every message becomes ``{id, type: "message", role, status,
content}`` with ``input_text`` / ``input_image`` parts (``output_text`` for an assistant's), and
echoed ``function_call`` / ``function_call_output`` / ``reasoning`` items are kept as sent. Each
gets an ``id`` when it has none, the cursor ``after`` and ``before`` name.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from aiohttp import web

from hermes_api_server.convert import IMAGE_TYPES, TEXT_TYPES
from hermes_api_server.errors import ApiError, invalid, json_response
from hermes_api_server.state import get_state, principal

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
_PREFIX = {"message": "msg", "function_call": "fc", "function_call_output": "fco", "reasoning": "rs"}


def _new_id(kind: str) -> str:
    return f"{_PREFIX.get(kind, 'item')}_{secrets.token_hex(12)}"


def _part(part: Any, role: str) -> dict[str, Any]:
    text_type = "output_text" if role == "assistant" else "input_text"
    if isinstance(part, str):
        return _text(part, text_type)
    kind = part.get("type")
    if kind in TEXT_TYPES:
        return _text(str(part.get("text", "")), text_type)
    if kind in IMAGE_TYPES:
        url = part.get("image_url")
        if isinstance(url, dict):
            url = url.get("url")
        # An inline data: image can be megabytes: it went to the model, it is not kept here.
        kept = url if isinstance(url, str) and url.startswith(("http://", "https://")) else None
        return {"type": "input_image", "detail": part.get("detail") or "auto", "image_url": kept}
    return dict(part)  # convert.response_items refused anything else already


def _text(text: str, kind: str) -> dict[str, Any]:
    return (
        {"type": kind, "text": text, "annotations": []}
        if kind == "output_text"
        else {"type": kind, "text": text}
    )


def redacted(value: Any, redact: Callable[[str], str]) -> Any:
    """Return ``value`` with ``redact`` applied to every string in it (the server's keys never
    reach the stored records, even when a request quotes one)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redacted(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v, redact) for v in value]
    return value


def input_items(value: Any, redact: Callable[[str], str] = str) -> list[dict[str, Any]]:
    """Return the items of a request's ``input`` (already validated by ``convert.response_items``),
    their texts passed through ``redact``."""
    raw = [value] if isinstance(value, str) else list(value)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for item in raw:
        if isinstance(item, str):
            item = {"type": "message", "role": "user", "content": item}
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role", "user")
            content = item.get("content")
            parts = [content] if isinstance(content, str) else list(content or [])
            entry: dict[str, Any] = {
                "id": item.get("id"),
                "type": "message",
                "role": role,
                "status": "completed",
                "content": [_part(p, role) for p in parts],
            }
        else:
            entry = dict(item)
        given = entry.get("id")
        if not isinstance(given, str) or not given or given in seen:
            entry["id"] = _new_id(kind)
        seen.add(entry["id"])
        out.append(redacted(entry, redact))
    return out


def page(
    items: list[dict[str, Any]], *, after: str | None, before: str | None, limit: int, order: str
) -> dict[str, Any]:
    """Return one page of ``items`` as an OpenAI list: ``{object, data, first_id, last_id, has_more}``.

    ``order`` ``asc`` lists the items as they were sent, ``desc`` (the default) newest first;
    ``after`` / ``before`` are item ids in that order.

    :raises ApiError: 400 for a cursor that names no item of this response.
    """
    ordered = items if order == "asc" else items[::-1]
    ids = [item["id"] for item in ordered]
    start, end = 0, len(ordered)
    for name, cursor in (("after", after), ("before", before)):
        if cursor is None:
            continue
        if cursor not in ids:
            raise invalid(f"{name} names no input item of this response: {cursor}", name)
        if name == "after":
            start = ids.index(cursor) + 1
        else:
            end = ids.index(cursor)
    window = ordered[start:end]
    # A `before` page alone is the one right before the cursor; otherwise the page starts the window.
    data = window[-limit:] if before is not None and after is None else window[:limit]
    return {
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": len(window) > len(data),
    }


def _limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_LIMIT:
        raise invalid(f"limit must be an integer from 1 to {MAX_LIMIT}", "limit")
    return value


async def list_input_items(request: web.Request) -> web.Response:
    """Handle ``GET /v1/responses/{response_id}/input_items``."""
    state = get_state(request)
    response_id = request.match_info["response_id"]
    query = request.query
    limit = _limit(query.get("limit"))
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise invalid("order must be asc or desc", "order")
    record = await state.store.get_response(principal(request), response_id)
    if record is None:
        raise ApiError(404, "response_not_found", f"Response not found: {response_id}", param="response_id")
    items = record.get("input") or []
    return json_response(
        page(
            items,
            after=query.get("after") or None,
            before=query.get("before") or None,
            limit=limit,
            order=order,
        )
    )
