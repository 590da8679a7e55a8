"""Convert between hermes_core records and PostgreSQL column values.

JSON columns are ``text`` holding compact JSON, ``NULL`` when empty, as in the SQLite backend.
Tool calls whose ``call_id`` is the placeholder ``""`` are stored as such and get their
``tc_<row id>_<index>`` on load, so an insert needs no second pass once the id is known.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hermes_core import ImagePart, NewRow, Part, Row, SessionRecord, StoredToolCall, TextPart
from hermes_postgres.row_build import plain_row

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


class ReadOnlyDict(dict[str, Any]):
    """A dict that refuses changes: a loaded row's ``meta`` (copy it with ``dict(...)``)."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a stored row's meta is read-only; copy it with dict(...) first")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReadOnlyDict, (dict(self),))


EMPTY_META = ReadOnlyDict()
_META_DECODER = json.JSONDecoder(object_hook=ReadOnlyDict)

SESSION_COLUMNS: tuple[str, ...] = (
    "id",
    "source",
    "cwd",
    "profile",
    "model",
    "provider",
    "reasoning_effort",
    "title",
    "title_origin",
    "parent_session_id",
    "channel_key",
    "system_overlay",
    "usage",
    "extra",
    "created_at",
    "updated_at",
)
JSON_SESSION_COLUMNS = frozenset({"usage", "extra"})
# What a load selects, in this order (the session id is known to the caller).
LOAD_COLUMNS: tuple[str, ...] = (
    "id",
    "position",
    "role",
    "content",
    "parts",
    "tool_calls",
    "call_id",
    "provider_call_id",
    "tool_name",
    "display_kind",
    "active",
    "archived_reason",
    "model",
    "reasoning",
    "input_tokens",
    "output_tokens",
    "meta",
    "created_at",
)
# What an insert binds per row, in this order (id and session id come from the statement).
INSERT_COLUMNS: tuple[str, ...] = (
    "position",
    "role",
    "content",
    "parts",
    "tool_calls",
    "call_id",
    "provider_call_id",
    "tool_name",
    "display_kind",
    "model",
    "reasoning",
    "input_tokens",
    "output_tokens",
    "meta",
    "created_at",
)
INSERT_TYPES: tuple[str, ...] = (
    "bigint",
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "bigint",
    "bigint",
    "text",
    "double precision",
)


def dump_json(value: Any) -> str:
    """Encode compact JSON; mappings are copied into dicts first."""
    if isinstance(value, Mapping) and not isinstance(value, dict):
        value = dict(value)
    return _ENCODER.encode(value)


def dump_mapping(value: Mapping[str, Any] | None) -> str | None:
    """Encode a mapping, or None when empty."""
    return dump_json(value) if value else None


# The decoder's scanner without decode()'s whitespace handling: the columns hold JSON this module
# wrote, compactly.
_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _decode(text: str) -> Any:
    try:
        value, end = _scan_once(text, 0)
    except (StopIteration, ValueError):
        raise ValueError(f"invalid JSON in the database: {text[:40]!r}") from None
    if end != len(text):
        raise ValueError(f"invalid JSON in the database: {text[:40]!r}")
    return value


def load_mapping(text: str | None) -> dict[str, Any]:
    """Decode a JSON object column into a new dict; NULL gives ``{}``."""
    if not text:
        return {}
    value = _decode(text)
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    return value


# Decoded metas whose values are all scalars, by their text (most tool results carry one of a few,
# such as {"is_error":false}): they hold nothing mutable, so rows may share them.
_META_MEMO: dict[str, ReadOnlyDict] = {}
_SCALARS = (str, int, float, bool, type(None))


def load_meta(text: str | None) -> Mapping[str, Any]:
    """Decode a row's ``meta`` into read-only dicts; nothing mutable is shared between rows."""
    if not text:
        return EMPTY_META
    memo = _META_MEMO.get(text)
    if memo is not None:
        return memo
    value = _load_meta(text)
    if len(text) <= 80 and all(isinstance(v, _SCALARS) for v in value.values()):
        if len(_META_MEMO) >= 256:
            _META_MEMO.clear()
        _META_MEMO[text] = value
    return value


def _load_meta(text: str) -> ReadOnlyDict:
    try:
        value = _META_DECODER.decode(text)
    except ValueError:
        raise ValueError(f"invalid JSON in the database: {text[:40]!r}") from None
    if not isinstance(value, ReadOnlyDict):
        raise ValueError("expected a JSON object")
    return value


def dump_parts(parts: Iterable[Part]) -> str | None:
    """Encode content parts (images as base64 data or a URL, with the MIME type)."""
    items: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            items.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            image: dict[str, Any] = {"type": "image", "mime": part.mime}
            if part.data is not None:
                image["data"] = base64.b64encode(part.data).decode("ascii")
            if part.url is not None:
                image["url"] = part.url
            items.append(image)
        else:
            raise TypeError(f"not a content part: {part!r}")
    return _ENCODER.encode(items) if items else None


def load_parts(text: str | None) -> tuple[Part, ...]:
    """Decode the ``parts`` column."""
    if not text:
        return ()
    parts: list[Part] = []
    for item in _decode(text):
        kind = item.get("type")
        if kind == "text":
            parts.append(TextPart(item["text"]))
        elif kind == "image":
            data = item.get("data")
            parts.append(
                ImagePart(
                    data=base64.b64decode(data) if data is not None else None,
                    url=item.get("url"),
                    mime=item.get("mime", "image/png"),
                )
            )
        else:
            raise ValueError(f"unknown content part type {kind!r}")
    return tuple(parts)


def dump_tool_calls(calls: Sequence[StoredToolCall]) -> str | None:
    """Encode tool calls as stored (placeholder ids stay ``""``)."""
    if not calls:
        return None
    for call in calls:
        for value in (call.call_id, call.provider_call_id, call.name, call.arguments):
            if not isinstance(value, str):
                raise TypeError("a tool call's fields must be strings")
    return _ENCODER.encode([[c.call_id, c.provider_call_id, c.name, c.arguments] for c in calls])


def load_tool_calls(text: str | None, row_id: int) -> tuple[StoredToolCall, ...]:
    """Decode the ``tool_calls`` column, filling placeholder ids from the row id."""
    if not text:
        return ()
    return tuple(
        [
            StoredToolCall(call_id or f"tc_{row_id}_{index}", provider_call_id, name, arguments)
            for index, (call_id, provider_call_id, name, arguments) in enumerate(_decode(text))
        ]
    )


def row_values(row: NewRow, now: float) -> tuple[Any, ...]:
    """Return one new row's values in :data:`INSERT_COLUMNS` order.

    :raises TypeError: for a value no column can hold (nothing is written then).
    """
    if not isinstance(row.role, str) or not isinstance(row.content, str):
        raise TypeError("a row's role and content must be strings")
    return (
        row.position,
        row.role,
        row.content,
        dump_parts(row.parts) if row.parts else None,
        dump_tool_calls(row.tool_calls) if row.tool_calls else None,
        row.call_id,
        row.provider_call_id,
        row.tool_name,
        row.display_kind,
        row.model,
        row.reasoning,
        None if row.input_tokens is None else int(row.input_tokens),
        None if row.output_tokens is None else int(row.output_tokens),
        dump_json(row.meta) if row.meta else None,
        float(row.created_at) if row.created_at is not None else now,
    )


def row_from_values(session_id: str, values: Sequence[Any]) -> Row:
    """Build a ``Row`` from :data:`LOAD_COLUMNS` values."""
    (
        row_id,
        position,
        role,
        content,
        parts,
        tool_calls,
        call_id,
        provider_call_id,
        tool_name,
        display_kind,
        active,
        archived_reason,
        model,
        reasoning,
        input_tokens,
        output_tokens,
        meta,
        created_at,
    ) = values
    meta_value = load_meta(meta)
    parts_value = load_parts(parts)
    calls = load_tool_calls(tool_calls, row_id)
    row = plain_row()
    if row is not None:
        row.id = row_id
        row.session_id = session_id
        row.position = position
        row.role = role
        row.content = content
        row.parts = parts_value
        row.tool_calls = calls
        row.call_id = call_id
        row.provider_call_id = provider_call_id
        row.tool_name = tool_name
        row.display_kind = display_kind
        row.active = active
        row.archived_reason = archived_reason
        row.model = model
        row.reasoning = reasoning
        row.input_tokens = input_tokens
        row.output_tokens = output_tokens
        row.meta = meta_value
        row.created_at = created_at
        row.__class__ = Row
        return row  # type: ignore[no-any-return]
    return Row(
        id=row_id,
        session_id=session_id,
        position=position,
        role=role,
        content=content,
        parts=parts_value,
        tool_calls=calls,
        call_id=call_id,
        provider_call_id=provider_call_id,
        tool_name=tool_name,
        display_kind=display_kind,
        active=active,
        archived_reason=archived_reason,
        model=model,
        reasoning=reasoning,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        meta=meta_value,
        created_at=created_at,
    )


def session_params(record: SessionRecord, now: float) -> tuple[Any, ...]:
    """Return a session's values in :data:`SESSION_COLUMNS` order; zero timestamps mean now."""
    created_at = record.created_at or now
    return (
        record.id,
        record.source,
        record.cwd,
        record.profile,
        record.model,
        record.provider,
        record.reasoning_effort,
        record.title,
        record.title_origin,
        record.parent_session_id,
        record.channel_key,
        record.system_overlay,
        dump_mapping(record.usage),
        dump_mapping(record.extra),
        created_at,
        record.updated_at or max(created_at, now),
    )


def session_value(column: str, value: Any) -> Any:
    """Encode one session field for an UPDATE."""
    return dump_mapping(value) if column in JSON_SESSION_COLUMNS else value


def fold(title: str | None) -> str | None:
    """The case-folded title the listing filter searches (done here: the server's lower() may
    only know ASCII, depending on its locale)."""
    return title.casefold() if isinstance(title, str) else None


def session_from_row(values: Sequence[Any]) -> SessionRecord:
    """Build a record from :data:`SESSION_COLUMNS` values, the message count and the preview."""
    base = values[: len(SESSION_COLUMNS)]
    message_count, preview = values[len(SESSION_COLUMNS)], values[len(SESSION_COLUMNS) + 1]
    fields = dict(zip(SESSION_COLUMNS, base, strict=True))
    fields["usage"] = load_mapping(fields["usage"])
    fields["extra"] = load_mapping(fields["extra"])
    return SessionRecord(**fields, message_count=int(message_count), preview=preview or "")
