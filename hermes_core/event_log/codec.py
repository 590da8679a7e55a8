"""How the event log encodes the core's events (docs/reference/core.md#what-the-log-holds).

Each event is encoded once, transport-neutrally, as the record of ``hermes_core.events`` it is:
``{"type": <class name>, <field>: <value>, ...}`` with nested records as objects and tuples as
arrays; a field equal to its default is left out, and ``session_id`` and ``seq`` are implied by
the log. Decoding rebuilds the same frozen dataclasses, so a transport projects a replayed event
exactly as it projects a live one. What differs, on purpose:

- consecutive ``TextDelta`` (or ``ReasoningDelta``) of one segment are stored as one *run*
  (their texts joined, the cut points and millisecond offsets of their timestamps beside), and
  come back as the same separate deltas with the same numbers;
- ``ToolProgress.tail`` is not stored (it repeats up to 64 KiB per event): decoding rebuilds it
  from the chunks read, redacted again, so a read that starts in the middle of a tool's output
  gets the tail from its start point on;
- image bytes (``ToolCompleted.images``) are not stored: the image's row keeps them; a decoded
  image has its ``mime`` (and ``url``) and ``data=None``;
- ``QuestionRequested.deadline_monotonic`` (a clock of the emitting process) is stored as a
  wall-clock deadline and comes back on the reader's monotonic clock.

A chunk's data is one format byte, a JSON header line and the zlib-compressed JSON array of the
encoded events.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
import types
import typing
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_core import events as ev
from hermes_core.content import ImagePart
from hermes_core.event_log.store import EventChunk

FORMAT = 1
#: How far above a chunk's last number its writer may have handed numbers out (see writer.py):
#: after a crash, numbering continues above it.
RESERVE = 65_536
_MISSING = object()
_set = object.__setattr__


@dataclass(frozen=True, slots=True)
class ChunkHeader:
    """What the kernel notes beside a chunk's events.

    :ivar reserve: a writer that finds this chunk last after a crash continues above this seq
        (numbers up to it may have been handed out live and lost).
    :ivar sealed: the writer closed the log cleanly after this chunk.
    :ivar open_turn: ``(turn_id, seq of its TurnStarted)`` of a turn running at the chunk's end.
    :ivar lost: ``(first, last)`` numbers lost in a crash just before this chunk.
    """

    reserve: int
    sealed: bool = False
    open_turn: tuple[str, int] | None = None
    lost: tuple[int, int] | None = None


# -- chunks -------------------------------------------------------------------------------------


def make_chunk(first_seq: int, last_seq: int, header: ChunkHeader, body: bytes) -> EventChunk:
    """Return the chunk of ``body`` (from :func:`encode_events`) under ``header``."""
    head = {"reserve": header.reserve}
    if header.sealed:
        head["sealed"] = True
    if header.open_turn is not None:
        head["open_turn"] = list(header.open_turn)  # type: ignore[assignment]
    if header.lost is not None:
        head["lost"] = list(header.lost)  # type: ignore[assignment]
    line = json.dumps(head, separators=(",", ":")).encode("ascii")
    return EventChunk(first_seq, last_seq, bytes([FORMAT]) + line + b"\n" + body)


def split_chunk(data: bytes) -> tuple[ChunkHeader, bytes]:
    """Return the header and the compressed body of a chunk's data.

    :raises ValueError: data this version cannot read.
    """
    if not data or data[0] != FORMAT:
        raise ValueError(f"unknown event chunk format {data[:1]!r}")
    end = data.index(b"\n", 1)
    head = json.loads(data[1:end])
    turn = head.get("open_turn")
    lost = head.get("lost")
    header = ChunkHeader(
        reserve=int(head["reserve"]),
        sealed=bool(head.get("sealed", False)),
        open_turn=(str(turn[0]), int(turn[1])) if turn else None,
        lost=(int(lost[0]), int(lost[1])) if lost else None,
    )
    return header, data[end + 1 :]


def encode_events(events: Sequence[ev.Event], *, level: int = 6) -> bytes:
    """Return the compressed body holding ``events`` (consecutive numbers, in order)."""
    text = json.dumps(_records(events), ensure_ascii=False, separators=(",", ":"), default=str)
    return zlib.compress(text.encode("utf-8"), level)


def decode_events(
    body: bytes, session_id: str, first_seq: int, redact: Callable[[str], str] | None = None
) -> list[ev.Event]:
    """Return the events of a compressed body, numbered from ``first_seq``.

    :param redact: applied to rebuilt ``ToolProgress.tail`` values.
    :raises ValueError: a body this version cannot read.
    """
    records = json.loads(zlib.decompress(body))
    out: list[ev.Event] = []
    tails: dict[str, str] = {}
    for record in records:
        if "cuts" in record:
            _expand_run(record, session_id, first_seq + len(out), out)
            continue
        event = _decode(record, session_id, tails, redact)
        _set(event, "seq", first_seq + len(out))
        out.append(event)
    return out


# -- encoding -----------------------------------------------------------------------------------


@functools.cache
def _defaults(cls: Any) -> tuple[tuple[str, Any], ...]:
    """Each field of a record class with its default (``_MISSING`` when it has none)."""
    found = []
    for item in dataclasses.fields(cls):
        if item.name in ("session_id", "seq"):
            continue
        if item.default is not dataclasses.MISSING:
            default = item.default
        elif item.default_factory is not dataclasses.MISSING:
            default = item.default_factory() if item.name != "ts" else _MISSING
        else:
            default = _MISSING
        found.append((item.name, default))
    return tuple(found)


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, ImagePart):
        image: dict[str, Any] = {"mime": value.mime}
        if value.url is not None:
            image["url"] = value.url
        return image
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields(value)
    return str(value)


def _fields(value: Any, out: dict[str, Any] | None = None) -> dict[str, Any]:
    out = {} if out is None else out
    kind: Any = type(value)
    for name, default in _defaults(kind):
        item = getattr(value, name)
        if default is not _MISSING and item == default:
            continue
        out[name] = _plain(item)
    return out


def _records(events: Sequence[ev.Event]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    at, end = 0, len(events)
    while at < end:
        event = events[at]
        kind = type(event)
        if kind is ev.TextDelta or kind is ev.ReasoningDelta:
            turn, segment = event.turn_id, event.segment_id  # type: ignore[attr-defined]
            stop = at + 1
            while stop < end:
                other = events[stop]
                if type(other) is not kind or other.segment_id != segment or other.turn_id != turn:
                    break
                stop += 1
            out.append(_run_record(events[at:stop]) if stop - at > 1 else _record(event))
            at = stop
        else:
            out.append(_record(event))
            at += 1
    return out


def _record(event: ev.Event) -> dict[str, Any]:
    record: dict[str, Any] = {"type": type(event).__name__}
    _fields(event, record)
    if isinstance(event, ev.ToolProgress):
        record.pop("tail", None)
    elif isinstance(event, ev.QuestionRequested):
        del record["deadline_monotonic"]
        record["deadline_at"] = event.deadline_monotonic - time.monotonic() + time.time()
    return record


def _run_record(run: Sequence[Any]) -> dict[str, Any]:
    first = run[0]
    record: dict[str, Any] = {"type": type(first).__name__, "ts": first.ts, "segment_id": first.segment_id}
    if first.turn_id is not None:
        record["turn_id"] = first.turn_id
    record["text"] = "".join(e.text for e in run)
    record["cuts"] = [len(e.text) for e in run]
    record["dts"] = [round((e.ts - first.ts) * 1000) for e in run[1:]]
    return record


# -- decoding -----------------------------------------------------------------------------------

_TYPES: dict[str, type[ev.Event]] = {}


def _event_types() -> dict[str, type[ev.Event]]:
    if not _TYPES:
        pending: list[type[ev.Event]] = [ev.Event]
        while pending:
            for sub in pending.pop().__subclasses__():
                _TYPES[sub.__name__] = sub
                pending.append(sub)
    return _TYPES


def _decode(
    record: dict[str, Any],
    session_id: str,
    tails: dict[str, str],
    redact: Callable[[str], str] | None,
) -> ev.Event:
    cls = _event_types().get(str(record.get("type")))
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


def _expand_run(record: dict[str, Any], session_id: str, seq: int, out: list[ev.Event]) -> None:
    """Append the deltas of a run record to ``out``, numbered from ``seq``."""
    kind = record["type"]
    if kind == "TextDelta":
        cls: type[ev.Event] = ev.TextDelta
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
            # A plain twin filled with plain stores, then made the frozen class (see _adopts).
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
            )  # type: ignore[call-arg]
            _set(event, "seq", seq)
        out.append(event)
        seq += 1


class _TextTwin(ev.Event):
    """``TextDelta``'s layout without the frozen ``__setattr__`` (decoding runs builds many)."""

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
            if type(probe) is not cls or probe != cls(
                session_id="s", turn_id="t", ts=1.0, segment_id="g", text="x"
            ):
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
def _converters(cls: type) -> dict[str, Callable[[Any], Any]]:
    """A converter from JSON per field of a record class, from its type hints."""
    hints = typing.get_type_hints(cls)
    return {
        item.name: _converter(hints[item.name])
        for item in dataclasses.fields(cls)
        if item.name not in ("session_id", "seq")
    }


def _same(value: Any) -> Any:
    return value


def _converter(hint: Any) -> Callable[[Any], Any]:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            convert = _converter(inner[0])
            return lambda value: None if value is None else convert(value)
        return _same
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _converter(args[0])
            if item is _same:
                return tuple
            return lambda value: tuple(item(v) for v in value)
        parts = [_converter(a) for a in args]
        return lambda value: tuple(c(v) for c, v in zip(parts, value, strict=False))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return lambda value: hint(**_values(hint, value))
    return _same
