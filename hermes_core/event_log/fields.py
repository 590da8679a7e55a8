"""Events as plain records and back, compiled once per event type from its type hints
(the encoding :mod:`hermes_core.event_log.codec` describes).

Encoding runs in the writer for every logged event, so each record class gets a list of steps
made from its fields' types: a plain value (text, number, flag, literal) is copied, a nested
record, a tuple or an optional one is converted by a step of its own, and only ``Any``-typed
values (tool arguments, payloads) go through the generic conversion. Decoding builds the frozen
dataclasses back the same way; runs of deltas are rebuilt through a mutable *twin* class of the
same layout, since the frozen ``__init__`` is the dearest part of a replay.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

from hermes_core import events as ev
from hermes_core.content import ImagePart

_MISSING = object()
_set = object.__setattr__
Convert = Callable[[Any], Any]
_SKIP = ("session_id", "seq")


# -- encoding -----------------------------------------------------------------------------------


def _generic(value: Any) -> Any:
    """Any value as JSON-ready data (for fields typed ``Any``: arguments, payloads, metadata)."""
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, tuple | list):
        return [_generic(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _generic(v) for k, v in value.items()}
    if isinstance(value, ImagePart):
        return _image(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encoder(type(value))(value, {})
    return str(value)


def _image(value: ImagePart) -> dict[str, Any]:
    image: dict[str, Any] = {"mime": value.mime}  # the bytes stay in the tool's row
    if value.url is not None:
        image["url"] = value.url
    return image


def _to_plain(hint: Any) -> Convert | None:
    """How to turn a value of type ``hint`` into JSON data; None when it already is."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in (str, int, float, bool, type(None)) or origin is typing.Literal:
        return None
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            step = _to_plain(inner[0])
            return None if step is None else (lambda v: None if v is None else step(v))
        return _generic
    if origin is tuple:
        items = [_to_plain(a) for a in args if a is not Ellipsis]
        if all(i is None for i in items):
            return list
        item = items[0]
        if len(args) == 2 and args[1] is Ellipsis and item is not None:
            return lambda v: [item(i) for i in v]
        return _generic
    if hint is ImagePart:
        return _image
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        nested = _encoder(hint)
        return lambda v: nested(v, {})
    return _generic


@functools.cache
def _encoder(cls: Any) -> Callable[[Any, dict[str, Any]], dict[str, Any]]:
    """The field-by-field encoder of a record class: fields equal to their default are left out."""
    hints = typing.get_type_hints(cls)
    steps: list[tuple[str, Any, Convert | None]] = []
    for item in dataclasses.fields(cls):
        if item.name in _SKIP:
            continue
        if item.default is not dataclasses.MISSING:
            default = item.default
        elif item.default_factory is not dataclasses.MISSING and item.name != "ts":
            default = item.default_factory()
        else:
            default = _MISSING
        steps.append((item.name, default, _to_plain(hints[item.name])))
    frozen = tuple(steps)

    def encode(value: Any, out: dict[str, Any]) -> dict[str, Any]:
        for name, default, step in frozen:
            item = getattr(value, name)
            if default is not _MISSING and item == default:
                continue
            out[name] = item if step is None else step(item)
        return out

    return encode


def to_record(event: ev.Event) -> dict[str, Any]:
    """One event as a record: ``{"type": <class name>, <field>: <value>, ...}``."""
    kind: Any = type(event)
    record = _encoder(kind)(event, {"type": kind.__name__})
    if kind is ev.ToolProgress:
        record.pop("tail", None)  # rebuilt by the reader
    elif kind is ev.QuestionRequested:
        monotonic = record.pop("deadline_monotonic")
        record["deadline_at"] = monotonic - time.monotonic() + time.time()
    return record


def run_record(run: Sequence[Any]) -> dict[str, Any]:
    """Consecutive deltas of one segment as one record (texts joined, cuts and ms offsets)."""
    first = run[0]
    ts0 = first.ts
    record: dict[str, Any] = {"type": type(first).__name__, "ts": ts0, "segment_id": first.segment_id}
    if first.turn_id is not None:
        record["turn_id"] = first.turn_id
    texts = [e.text for e in run]
    record["text"] = "".join(texts)
    record["cuts"] = [len(t) for t in texts]
    record["dts"] = [round((e.ts - ts0) * 1000) for e in run[1:]]
    return record


# -- decoding -----------------------------------------------------------------------------------

_TYPES: dict[str, type[ev.AnyEvent]] = {}


def event_types() -> dict[str, type[ev.AnyEvent]]:
    """Every event class by name."""
    if not _TYPES:
        _TYPES.update((cls.__name__, cls) for cls in ev.EVENT_TYPES)
    return _TYPES


def from_record(
    record: dict[str, Any], session_id: str, tails: dict[str, str], redact: Callable[[str], str] | None
) -> ev.AnyEvent:
    """Rebuild one event (not a run) from its record; ``tails`` carries tool output between calls.

    :raises ValueError: an unknown event type.
    """
    cls = event_types().get(str(record.get("type")))
    if cls is None:
        raise ValueError(f"unknown event type {record.get('type')!r}")
    kwargs = _values(cls, record)
    if cls is ev.QuestionRequested:
        deadline = float(record.get("deadline_at", 0.0))
        kwargs["deadline_monotonic"] = time.monotonic() + (deadline - time.time())
    elif cls is ev.ToolProgress:
        from hermes_core.tool_context import TAIL_CHARS

        call_id = str(kwargs.get("call_id"))
        tail = (tails.get(call_id, "") + str(kwargs.get("chunk", "")))[-TAIL_CHARS:]
        tails[call_id] = tail
        kwargs["tail"] = redact(tail) if redact is not None else tail
    return cls(session_id=session_id, **kwargs)


def expand_run(record: dict[str, Any], session_id: str, seq: int, out: list[ev.AnyEvent]) -> None:
    """Append the deltas of a run record to ``out``, numbered from ``seq``."""
    kind = record["type"]
    cls: Any
    if kind == "TextDelta":
        cls = ev.TextDelta
        twin: Any = _TextTwin if _TWINS else None
    elif kind == "ReasoningDelta":
        cls, twin = ev.ReasoningDelta, (_ReasoningTwin if _TWINS else None)
    else:
        raise ValueError(f"a run of {kind!r} events")
    text = str(record["text"])
    ts0 = float(record["ts"])
    offsets = [0, *record.get("dts", ())]
    turn_id = record.get("turn_id")
    segment_id = str(record["segment_id"])
    at = 0
    new = object.__new__
    for cut, dt in zip(record["cuts"], offsets, strict=True):
        piece = text[at : at + cut]
        at += cut
        if twin is not None:
            event = new(twin)
            event.session_id = session_id
            event.turn_id = turn_id
            event.ts = ts0 + dt / 1000
            event.seq = seq
            event.segment_id = segment_id
            event.text = piece
            event.__class__ = cls
        else:
            event = cls(
                session_id=session_id, turn_id=turn_id, ts=ts0 + dt / 1000, segment_id=segment_id, text=piece
            )
            _set(event, "seq", seq)
        out.append(event)
        seq += 1


class _TextTwin(ev.Event):
    """``TextDelta``'s layout without the frozen ``__setattr__``."""

    __slots__ = ("segment_id", "text")
    __setattr__ = object.__setattr__


class _ReasoningTwin(ev.Event):
    """``ReasoningDelta``'s layout without the frozen ``__setattr__``."""

    __slots__ = ("segment_id", "text")
    __setattr__ = object.__setattr__


def _adopts() -> bool:
    """Say whether the twins turn into deltas equal to the constructor's (else use it)."""
    try:
        for twin, cls in ((_TextTwin, ev.TextDelta), (_ReasoningTwin, ev.ReasoningDelta)):
            probe: Any = object.__new__(twin)
            probe.session_id, probe.turn_id, probe.ts, probe.seq = "s", "t", 1.0, 7
            probe.segment_id, probe.text = "g", "x"
            probe.__class__ = cls
            made = cls(session_id="s", turn_id="t", ts=1.0, segment_id="g", text="x")
            if type(probe) is not cls or probe != made:
                return False
    except (TypeError, AttributeError):
        return False
    return True


_TWINS = _adopts()


def _values(cls: type, record: dict[str, Any]) -> dict[str, Any]:
    converters = _converters(cls)
    kwargs: dict[str, Any] = {}
    for name, value in record.items():
        convert = converters.get(name)
        if convert is not None:
            kwargs[name] = convert(value)
    return kwargs


@functools.cache
def _converters(cls: type) -> dict[str, Convert]:
    """A converter from JSON per field of a record class, from its type hints."""
    hints = typing.get_type_hints(cls)
    return {
        item.name: _from_plain(hints[item.name]) for item in dataclasses.fields(cls) if item.name not in _SKIP
    }


def _same(value: Any) -> Any:
    return value


def _from_plain(hint: Any) -> Convert:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            convert = _from_plain(inner[0])
            return lambda value: None if value is None else convert(value)
        return _same
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _from_plain(args[0])
            if item is _same:
                return tuple
            return lambda value: tuple(item(v) for v in value)
        parts = [_from_plain(a) for a in args]
        return lambda value: tuple(c(v) for c, v in zip(parts, value, strict=False))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return lambda value: hint(**_values(hint, value))
    return _same
