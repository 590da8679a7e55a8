"""Convert values between hermes_core records and SQLite columns: JSON, parts, tool calls, sessions.

JSON columns hold ``NULL`` when the value is empty, so the common row (no parts, no tool calls,
no meta) costs no JSON work in either direction. Message rows as a whole are in ``row_codec``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Any

from hermes_core import ImagePart, Part, SessionRecord, StoredToolCall, TextPart
from hermes_sqlite.slot_twins import TOOL_CALL_TWIN

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# What _ENCODER does to a str (quotes and escapes, non-ASCII kept); only str is accepted.
_string: Any = json.encoder.encode_basestring
# The decoder's scanner without decode()'s two whitespace regexes: we only read JSON we wrote
# compactly ourselves.
_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _decode(text: str) -> Any:
    try:
        return _scan_once(text, 0)[0]
    except StopIteration:
        raise ValueError(f"invalid JSON in the database: {text[:40]!r}") from None


# Session columns in SessionRecord field order (message_count is computed, not stored).
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
_JSON_SESSION_COLUMNS = frozenset({"usage", "extra"})


class ReadOnlyDict(dict[str, Any]):
    """A dict that refuses changes: the ``meta`` of loaded rows, which may be shared.

    Rows are frozen and cached; a read-only ``meta`` keeps one caller from changing what the
    next one loads. It is still a dict, so ``json.dumps`` and ``dict(meta)`` work.
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a stored row's meta is read-only; copy it with dict(...) first")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReadOnlyDict, (dict(self),))

    def __copy__(self) -> ReadOnlyDict:
        return self


EMPTY_META = ReadOnlyDict()
_scan_meta = json.JSONDecoder(object_hook=ReadOnlyDict).scan_once  # type: ignore[attr-defined]


# Decoded metas whose values are all scalars, by their JSON text: nearly every tool result's
# meta is one of a few short texts such as {"is_error":false}. Their ReadOnlyDicts hold nothing
# mutable, so rows can share them.
_META_MEMO: dict[str, ReadOnlyDict] = {}
_MEMO_MAX_TEXT = 80
_MEMO_MAX_ENTRIES = 256
_SCALARS = (str, int, float, bool, type(None))


def load_meta(text: str | None) -> Mapping[str, Any]:
    """Decode a row's ``meta`` column into read-only dicts.

    :param text: the column value.
    :returns: the mapping; NULL gives a shared empty one.
    """
    if not text:
        return EMPTY_META
    value = _META_MEMO.get(text)
    if value is not None:
        return value
    try:
        value = _scan_meta(text, 0)[0]
    except StopIteration:
        raise ValueError(f"invalid JSON in the database: {text[:40]!r}") from None
    if not isinstance(value, ReadOnlyDict):
        raise ValueError("expected a JSON object")
    if len(text) <= _MEMO_MAX_TEXT and all(isinstance(v, _SCALARS) for v in value.values()):
        if len(_META_MEMO) >= _MEMO_MAX_ENTRIES:
            _META_MEMO.clear()
        _META_MEMO[text] = value
    return value


# Encoded metas whose values are all True, False or None, by their items. Only singletons go
# in, so True and 1 (equal, same hash) can never stand for each other.
_FLAGS_MEMO: dict[tuple[tuple[str, Any], ...], str] = {}


def dump_meta(meta: Mapping[str, Any]) -> str | None:
    """Encode a row's ``meta`` as compact JSON, or None when it is empty.

    :param meta: the mapping.
    :returns: the JSON text or None.
    """
    if not meta:
        return None
    if len(meta) <= 4:
        items = tuple(meta.items())
        for key, value in items:
            if type(key) is not str or not (value is True or value is False or value is None):
                break
        else:
            text = _FLAGS_MEMO.get(items)
            if text is None:
                if len(_FLAGS_MEMO) >= _MEMO_MAX_ENTRIES:
                    _FLAGS_MEMO.clear()
                text = _FLAGS_MEMO[items] = dump_json(meta)
            return text
    return dump_json(meta)


def dump_json(value: Any) -> str:
    """Encode a value as compact JSON.

    :param value: anything the json module accepts; mappings are copied into dicts first.
    :returns: the JSON text.
    """
    if isinstance(value, Mapping) and not isinstance(value, dict):
        value = dict(value)
    return _ENCODER.encode(value)


def dump_mapping(value: Mapping[str, Any] | None) -> str | None:
    """Encode a mapping as JSON, or None when it is empty.

    :param value: the mapping.
    :returns: the JSON text or None.
    """
    if not value:
        return None
    return dump_json(value)


def load_mapping(text: str | None) -> dict[str, Any]:
    """Decode a JSON object column; NULL gives an empty dict.

    :param text: the column value.
    :returns: a new dict.
    """
    if not text:
        return {}
    value = _decode(text)
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    return value


def dump_parts(parts: Iterable[Part]) -> str | None:
    """Encode content parts; images carry base64 data or a URL, plus the MIME type.

    :param parts: the parts of a row.
    :returns: the JSON text, or None when there are no parts.
    """
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
    """Decode the ``parts`` column.

    :param text: the column value.
    :returns: the parts, empty when NULL.
    """
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


def dump_tool_calls(calls: tuple[StoredToolCall, ...], row_id: int) -> str | None:
    """Encode an assistant row's tool calls, filling placeholder call ids.

    The JSON is put together from encoded strings: four times faster than building dicts for
    the encoder, and the same text.

    :param calls: the tool calls; a ``call_id`` of ``""`` becomes ``tc_<row id>_<index>``.
    :param row_id: the id the row is inserted with.
    :returns: the JSON text, or None when there are no calls.
    """
    if not calls:
        return None
    try:
        return (
            "["
            + ",".join(
                [
                    f'{{"call_id":{_string(call.call_id or f"tc_{row_id}_{index}")},'
                    f'"provider_call_id":{_string(call.provider_call_id)},'
                    f'"name":{_string(call.name)},"arguments":{_string(call.arguments)}}}'
                    for index, call in enumerate(calls)
                ]
            )
            + "]"
        )
    except TypeError:
        pass  # a field that is not a string: let the encoder handle (or refuse) it
    items = [
        {
            "call_id": call.call_id or f"tc_{row_id}_{index}",
            "provider_call_id": call.provider_call_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        for index, call in enumerate(calls)
    ]
    return _ENCODER.encode(items)


def load_tool_calls(text: str | None) -> tuple[StoredToolCall, ...]:
    """Decode the ``tool_calls`` column.

    :param text: the column value.
    :returns: the tool calls, empty when NULL.
    """
    if not text:
        return ()
    items = _decode(text)
    twin = TOOL_CALL_TWIN
    if twin is None:
        return tuple(
            StoredToolCall(
                call_id=item["call_id"],
                provider_call_id=item["provider_call_id"],
                name=item["name"],
                arguments=item["arguments"],
            )
            for item in items
        )
    calls: list[StoredToolCall] = []
    for item in items:
        call = object.__new__(twin)
        call.call_id = item["call_id"]
        call.provider_call_id = item["provider_call_id"]
        call.name = item["name"]
        call.arguments = item["arguments"]
        call.__class__ = StoredToolCall  # type: ignore[assignment]
        calls.append(call)  # type: ignore[arg-type]
    return tuple(calls)


def session_params(record: SessionRecord, now: float) -> tuple[Any, ...]:
    """Build the column values of a session, in :data:`SESSION_COLUMNS` order.

    :param record: the session.
    :param now: the time used for a zero ``created_at`` / ``updated_at``.
    :returns: the parameter tuple.
    """
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
    """Encode one session field for an UPDATE.

    :param column: the column name (a :data:`SESSION_COLUMNS` entry).
    :param value: the new value.
    :returns: what to bind.
    """
    if column in _JSON_SESSION_COLUMNS:
        return dump_mapping(value)
    return value


def session_from_row(values: tuple[Any, ...]) -> SessionRecord:
    """Build a record from :data:`SESSION_COLUMNS` values, the active message count and,
    optionally, the preview (the first user message).

    :param values: the fetched tuple.
    :returns: the session record.
    """
    preview = values[len(SESSION_COLUMNS) + 1] if len(values) > len(SESSION_COLUMNS) + 1 else None
    values = values[: len(SESSION_COLUMNS) + 1]
    (
        session_id,
        source,
        cwd,
        profile,
        model,
        provider,
        reasoning_effort,
        title,
        title_origin,
        parent_session_id,
        channel_key,
        system_overlay,
        usage,
        extra,
        created_at,
        updated_at,
        message_count,
    ) = values
    return SessionRecord(
        id=session_id,
        source=source,
        cwd=cwd,
        profile=profile,
        model=model,
        provider=provider,
        reasoning_effort=reasoning_effort,
        title=title,
        title_origin=title_origin,
        parent_session_id=parent_session_id,
        channel_key=channel_key,
        system_overlay=system_overlay,
        usage=load_mapping(usage),
        extra=load_mapping(extra),
        created_at=created_at,
        updated_at=updated_at,
        message_count=message_count,
        preview=preview or "",
    )
