"""JSON text columns: compact encoding, strict decoding, read-only row metas, content parts.

Columns that hold JSON hold ``NULL`` when the value is empty, so the common row (no parts, no
tool calls, no meta) costs no JSON work in either direction.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Any

from hermes_core.content import ImagePart, Part, TextPart

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# What the encoder does to a str (quotes and escapes, non-ASCII kept); only str is accepted.
encode_string: Any = json.encoder.encode_basestring
# The decoder's scanner without decode()'s whitespace handling: columns hold JSON a backend wrote
# compactly itself.
_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _invalid(text: str) -> ValueError:
    return ValueError(f"invalid JSON in the database: {text[:40]!r}")


def _scan(scan: Any, text: str) -> Any:
    try:
        value, end = scan(text, 0)
    except (StopIteration, ValueError):
        raise _invalid(text) from None
    if end != len(text):
        raise _invalid(text)
    return value


def decode_json(text: str) -> Any:
    """Decode a column's JSON text.

    :raises ValueError: ``invalid JSON in the database`` for text that is not one JSON value.
    """
    return _scan(_scan_once, text)


def dump_json(value: Any) -> str:
    """Encode a value as compact JSON; mappings are copied into dicts first."""
    if isinstance(value, Mapping) and not isinstance(value, dict):
        value = dict(value)
    return _ENCODER.encode(value)


def dump_mapping(value: Mapping[str, Any] | None) -> str | None:
    """Encode a mapping as JSON, or None when it is empty."""
    return dump_json(value) if value else None


def load_mapping(text: str | None) -> dict[str, Any]:
    """Decode a JSON object column into a new dict; NULL gives ``{}``."""
    if not text:
        return {}
    value = decode_json(text)
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    return value


class ReadOnlyDict(dict[str, Any]):
    """A dict that refuses changes: the ``meta`` of loaded rows, which may be shared.

    A backend may cache rows and share metas between them; a read-only ``meta`` keeps one caller
    from changing what the next one loads. It is still a dict, so ``json.dumps`` and
    ``dict(meta)`` work.
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
    """Decode a row's ``meta`` column into read-only dicts; NULL gives a shared empty one.

    Nothing mutable is shared between rows.
    """
    if not text:
        return EMPTY_META
    value = _META_MEMO.get(text)
    if value is not None:
        return value
    value = _scan(_scan_meta, text)
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
    """Encode a row's ``meta`` as compact JSON, or None when it is empty."""
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


def dump_parts(parts: Iterable[Part]) -> str | None:
    """Encode content parts (images as base64 data or a URL, with the MIME type); None for none.

    :raises TypeError: for something that is not a content part.
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
    """Decode a ``parts`` column; NULL gives no parts."""
    if not text:
        return ()
    parts: list[Part] = []
    for item in decode_json(text):
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
