"""Read response bodies and server-sent events incrementally, failing when the upstream goes silent.

Any object with ``async readany() -> bytes`` will do (aiohttp's ``StreamReader`` has it). Lines are
split here rather than with ``readline`` so one very long ``data:`` line (a whole tool call sent
at once) is never rejected, and every read has its own stall timeout.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from hermes_core.provider_kit.stall import StallWatch

T = TypeVar("T")


class StreamStalled(Exception):
    """The upstream sent nothing for the stall timeout."""


class StreamBroken(Exception):
    """The stream ended or was cut before it was complete, or could not be parsed."""


class UpstreamError(Exception):
    """The stream carried an error object or event; ``payload`` is its decoded data."""

    def __init__(self, payload: Any) -> None:
        super().__init__("error in stream")
        self.payload = payload


class ByteStream(Protocol):
    """What the readers need of a response body."""

    async def readany(self) -> bytes:
        """Return the next bytes available, or ``b""`` at the end of the body."""
        ...


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its ``event:`` name (``message`` by default) and joined data."""

    event: str
    data: str


async def read_some(stream: ByteStream, stall_timeout: float | None) -> bytes:
    """Return the next bytes of ``stream`` (``b""`` at its end).

    :param stall_timeout: seconds the read may wait; None when the stream bounds its reads
        itself (an aiohttp body read with a ``sock_read`` timeout, as ``HttpClient`` sets one),
        which spares a timer per read on a busy stream.
    :raises StreamStalled: when nothing arrives in time (the stream's own timeout included).
    """
    try:
        if stall_timeout is None:
            return await stream.readany()
        async with asyncio.timeout(stall_timeout):
            return await stream.readany()
    except TimeoutError:
        raise StreamStalled() from None


async def read_body(stream: ByteStream, stall_timeout: float, limit: int | None = None) -> bytes:
    """Return the whole body, or its first ``limit`` bytes.

    :param stall_timeout: seconds each read may wait before :class:`StreamStalled` is raised.
    :param limit: stop reading once this many bytes are in; ``None`` reads to the end.
    """
    chunks = bytearray()
    while limit is None or len(chunks) < limit:
        data = await read_some(stream, stall_timeout)
        if not data:
            break
        chunks.extend(data)
    return bytes(chunks if limit is None else chunks[:limit])


async def iter_lines(stream: ByteStream, stall_timeout: float | None) -> AsyncIterator[str]:
    """Yield the decoded lines of ``stream`` without their line endings.

    :param stall_timeout: seconds each read may wait before :class:`StreamStalled` is raised
        (None: the stream bounds its reads itself, see :func:`read_some`).
    """
    buffer = bytearray()
    while data := await read_some(stream, stall_timeout):
        buffer.extend(data)
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            line = bytes(buffer[start:end])
            start = end + 1
            yield line.rstrip(b"\r").decode("utf-8", errors="replace")
        del buffer[:start]
    if buffer:
        yield bytes(buffer).rstrip(b"\r").decode("utf-8", errors="replace")


async def iter_events(stream: ByteStream, stall_timeout: float | None) -> AsyncIterator[SseEvent]:
    """Yield the events of an SSE body; an event is dispatched at each blank line or at EOF.

    Lines are split here as :func:`iter_lines` splits them, in the same generator: one fewer
    layer for every event of a busy stream. Each read is decoded once, up to its last line
    break (a break is never part of a multi-byte UTF-8 sequence, so this decodes exactly as
    line by line does), and ``data: `` lines, nearly all of a model's stream, take a short path.

    :param stall_timeout: seconds each read may wait before :class:`StreamStalled` is raised
        (None: the stream bounds its reads itself, see :func:`read_some`). On a stream that
        can be failed from outside (aiohttp's body reader) one timer serves every read
        (:class:`~hermes_core.provider_kit.stall.StallWatch`), else each read has its own.
    """
    watch = None
    if stall_timeout is not None and StallWatch.fits(stream):
        watch = StallWatch(stall_timeout, stream, StreamStalled)
    try:
        name = ""
        data: list[str] = []
        held: list[bytes] = []  # what was read after the last line break (joined once, not per read)
        eof = False
        while not eof:
            if watch is None:
                chunk = await read_some(stream, stall_timeout)
            else:
                watch.start()
                try:
                    chunk = await stream.readany()
                finally:
                    watch.reading = False
            if chunk:
                end = chunk.rfind(b"\n")
                if end < 0:
                    held.append(chunk)
                    continue
                if held:
                    held.append(chunk[:end])
                    head = b"".join(held)
                else:
                    head = chunk[:end]
                rest = chunk[end + 1 :]
                held = [rest] if rest else []
                text = head.decode("utf-8", errors="replace")
                lines = text.split("\n")
                if "\r" in text:
                    lines = [line.rstrip("\r") for line in lines]
            else:
                eof = True
                lines = [b"".join(held).rstrip(b"\r").decode("utf-8", errors="replace")] if held else []
            for line in lines:
                if line.startswith("data: "):
                    data.append(line[6:])
                    continue
                if not line:
                    if data:
                        yield SseEvent(name or "message", data[0] if len(data) == 1 else "\n".join(data))
                    name, data = "", []
                    continue
                if line.startswith(":"):
                    continue  # a comment, used by servers as keep-alive
                field, _, value = line.partition(":")
                if value.startswith(" "):
                    value = value[1:]
                if field == "data":
                    data.append(value)
                elif field == "event":
                    name = value
        if data:
            yield SseEvent(name or "message", "\n".join(data))
    finally:
        if watch is not None:
            watch.close()


# A \uD800-\uDFFF escape. json pairs valid ones into one character; a lone one stays a surrogate,
# which is no text (UTF-8 cannot hold it, so nothing could store or send on such a reply).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_lone_surrogates(value: Any) -> Any:
    """Return ``value`` with every lone surrogate in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    return value


def decode_event(data: str, feed: Callable[[Any], list[T]]) -> list[T]:
    """Parse one event's JSON data and hand it to a stream decoder.

    :param data: the event's data, shown (shortened) when it is not JSON.
    :param feed: the decoder; a ``ValueError`` from it means the event had the wrong shape.
    :returns: what ``feed`` returned.
    :raises StreamBroken: when the data is not JSON or the decoder rejects it.
    """
    try:
        payload = json.loads(data)
    except ValueError:
        raise StreamBroken(f"the upstream sent a malformed stream event: {data[:200]!r}") from None
    if "\\" in data and _SURROGATE_ESCAPE.search(data):  # rare: only then are the strings walked
        try:
            payload = _without_lone_surrogates(payload)
        except RecursionError:
            raise StreamBroken("the upstream sent a stream event nested too deeply") from None
    try:
        return feed(payload)
    except ValueError as exc:
        raise StreamBroken(f"the upstream sent a malformed stream event ({exc})") from None
