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

import json
import json.encoder
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_core import events as ev
from hermes_core.event_log.fields import expand_run, from_record, run_record, to_record
from hermes_core.event_log.store import EventChunk

FORMAT = 1
#: How far above its last number the writer of a chunk this version cannot read is assumed to
#: have shown numbers (after a crash, numbering continues above it). This version's writer shows
#: only stored numbers and notes its chunk's last number as the reservation (see chunk_writes.py).
RESERVE = 65_536
_set = object.__setattr__


@dataclass(frozen=True, slots=True)
class ChunkHeader:
    """What the kernel notes beside a chunk's events.

    :ivar reserve: a writer that finds this chunk last after a crash continues above this seq
        (the newest number the chunk's writer may have shown; this version's writer shows only
        stored numbers, so it notes the chunk's last number).
    :ivar sealed: the writer closed the log cleanly after this chunk.
    :ivar open_turn: ``(turn_id, seq of its TurnStarted)`` of a turn running at the chunk's end.
    :ivar lost: ``(first, last)`` numbers lost in a crash just before this chunk.
    """

    reserve: int
    sealed: bool = False
    open_turn: tuple[str, int] | None = None
    lost: tuple[int, int] | None = None


# -- chunks -------------------------------------------------------------------------------------


def _encoder(*, ensure_ascii: bool, default: Callable[[Any], Any] | None) -> Callable[[Any], str]:
    """Return a compact JSON encoder made once.

    ``json.dumps`` with options builds a new encoder for every call, a third of a small chunk's
    encoding (every busy session writes one every ``FLUSH_S``), and even a kept
    ``JSONEncoder.encode`` makes a new C encoder and a circular-reference memo per call, about
    half of encoding a provisional chunk's few records. So the C encoder is made once and called
    directly: the same text. What it encodes is built fresh for each call (the records, the
    header) and never refers to itself, so the memo has nothing to do. Where the json module has
    no C accelerator, ``JSONEncoder.encode``.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    default = default or json.JSONEncoder().default  # raises TypeError, as json.dumps does
    if make is None:
        kept = json.JSONEncoder(ensure_ascii=ensure_ascii, separators=(",", ":"), default=default)
        return kept.encode
    strings = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    encode = make(None, default, strings, None, ":", ",", False, False, True)

    def encoded(value: Any) -> str:
        return "".join(encode(value, 0))

    return encoded


_HEAD_JSON = _encoder(ensure_ascii=True, default=None)
_BODY_JSON = _encoder(ensure_ascii=False, default=str)


def make_chunk(first_seq: int, last_seq: int, header: ChunkHeader, body: bytes) -> EventChunk:
    """Return the chunk of ``body`` (from :func:`encode_events`) under ``header``."""
    head = {"reserve": header.reserve}
    if header.sealed:
        head["sealed"] = True
    if header.open_turn is not None:
        head["open_turn"] = list(header.open_turn)  # type: ignore[assignment]
    if header.lost is not None:
        head["lost"] = list(header.lost)  # type: ignore[assignment]
    line = _HEAD_JSON(head).encode("ascii")
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


#: A body this small, asked for at level 1 (the provisional chunks a streaming session writes
#: every ``FLUSH_S``), is stored uncompressed: deflate would save a few dozen bytes of a chunk
#: rewritten at the next compaction, and its set-up costs more than the rest of the chunk.
STORE_BELOW = 4096


def encode_events(events: Sequence[ev.Event], *, level: int = 6) -> bytes:
    """Return the compressed body holding ``events`` (consecutive numbers, in order).

    A zlib stream whose window fits the body: ``zlib.compress`` sets up a 32 KiB window and a
    64 K-entry hash table for every call, which cost 4-5x the compression itself for the few
    hundred bytes of a short turn's events (each API request writes one or two such chunks).
    A window no smaller than the body finds the same matches; ``zlib.decompress`` reads any
    window size from the stream's header.
    """
    raw = _BODY_JSON(_records(events)).encode()
    if level == 0 or (level == 1 and len(raw) <= STORE_BELOW):
        return stored_zlib(raw)
    bits = min(15, max(9, len(raw).bit_length() + 1))  # zlib keeps 262 bytes of the window back
    packer = zlib.compressobj(level, zlib.DEFLATED, bits, max(1, min(8, bits - 7)))
    return packer.compress(raw) + packer.flush()


def stored_zlib(raw: bytes) -> bytes:
    """Return ``raw`` as a zlib stream of stored (uncompressed) blocks, as level 0 makes one.

    Built here rather than by ``zlib.compressobj(0)``: its set-up (the window and the hash
    table, allocated and freed per call) costs far more than the few hundred bytes of a
    provisional chunk written every ``FLUSH_S`` for every streaming session. Any zlib reader
    reads it (``zlib.decompress`` included).
    """
    end = len(raw)
    if end <= 0xFFFF:  # one block: nearly always
        return b"".join((_STORED_HEAD, _BLOCK(1, end, end ^ 0xFFFF), raw, _ADLER(zlib.adler32(raw))))
    parts = [_STORED_HEAD]
    for at in range(0, end, 0xFFFF):
        piece = raw[at : at + 0xFFFF]
        parts += (_BLOCK(int(at + 0xFFFF >= end), len(piece), len(piece) ^ 0xFFFF), piece)
    parts.append(_ADLER(zlib.adler32(raw)))
    return b"".join(parts)


# A zlib header: deflate with the smallest window (stored blocks refer to none), its check bits.
_STORED_HEAD = bytes((0x08, (31 - (0x08 << 8) % 31) % 31))
_BLOCK = struct.Struct("<BHH").pack  # a stored block's header: final flag, length, its complement
_ADLER = struct.Struct(">I").pack


def decode_events(
    body: bytes, session_id: str, first_seq: int, redact: Callable[[str], str] | None = None
) -> list[ev.AnyEvent]:
    """Return the events of a compressed body, numbered from ``first_seq``.

    :param redact: applied to rebuilt ``ToolProgress.tail`` values.
    :raises ValueError: a body this version cannot read.
    """
    records = json.loads(zlib.decompress(body))
    out: list[ev.AnyEvent] = []
    tails: dict[str, str] = {}
    for record in records:
        if "cuts" in record:
            expand_run(record, session_id, first_seq + len(out), out)
            continue
        event = from_record(record, session_id, tails, redact)
        _set(event, "seq", first_seq + len(out))
        out.append(event)
    return out


# -- records -------------------------------------------------------------------------------------


def _records(events: Sequence[ev.Event]) -> list[dict[str, Any]]:
    """The records of consecutive events: runs of deltas of one segment become one record."""
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
            out.append(run_record(events[at:stop]) if stop - at > 1 else to_record(event))
            at = stop
        else:
            out.append(to_record(event))
            at += 1
    return out
