"""pi's JSONL channel on stdio: records in from stdin, records out to the protected stdout
(docs/reference/pi.md#framing).

Framing is the kernel's (``rpc.LineSplitter``: LF only, so U+2028 and U+2029 stay data; a CR
before the LF is dropped) and so is the writer (``rpc.Outbox``: one FIFO, written whole from a
thread, with flush and loss detection). Nothing but records reaches stdout.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from hermes_core import rpc

log = logging.getLogger("hermes.pi")
#: The longest command line accepted (a prompt with base64 images can be large).
MAX_LINE_BYTES = 64 * rpc.MIB


class JsonlChannel:
    """Read command lines and write records, one JSON object per line.

    :param reader: the descriptor commands come from (stdin).
    :param writer: the descriptor records go to (the protected stdout).
    :param on_lost: called once on the loop when the output is gone (the client left).
    :param prefix: input already read from ``reader`` (by the early step), handled first.
    """

    def __init__(self, reader: int, writer: int, on_lost: Callable[[], None], prefix: bytes = b"") -> None:
        self._prefix = prefix
        self._reader = rpc.FdReader(reader)
        self._splitter = rpc.LineSplitter(MAX_LINE_BYTES)
        self._on_lost = on_lost
        self._outbox = rpc.Outbox(writer, asyncio.get_running_loop(), self._lost)

    @property
    def open(self) -> bool:
        """Whether records are still written (the output is not lost or closed)."""
        return self._outbox.open

    def send(self, record: dict[str, Any]) -> bool:
        """Encode one record and queue it.

        :param record: a JSON-ready object.
        :returns: False when it was dropped (unserialisable, or the output is gone).
        """
        try:
            frame = rpc.encode_frame(record)
        except (TypeError, ValueError, RecursionError):
            log.exception("pi: cannot encode a %s record", record.get("type"))
            return False
        return self._outbox.put(frame)

    def send_frame(self, frame: bytes) -> bool:
        """Queue one already encoded record (a line ending in ``\\n``)."""
        return self._outbox.put(frame)

    async def lines(self) -> AsyncIterator[bytes | None]:
        """Yield each non-blank input line (``None`` for one over the size cap) until EOF."""
        prefix, self._prefix = self._prefix, b""
        for line in self._splitter.feed(prefix):
            yield line
        while True:
            try:
                chunk = await self._reader.read()
            except OSError as exc:
                log.warning("pi: reading stdin failed: %s", exc)
                chunk = b""
            if not chunk:
                for line in self._splitter.finish():
                    yield line
                return
            for line in self._splitter.feed(chunk):
                yield line

    async def flush(self, timeout: float) -> bool:
        """Wait until every queued record is written (False on timeout or lost output)."""
        return await self._outbox.flush(timeout)

    async def close(self, timeout: float = 1.0) -> None:
        """Stop reading, write what is queued and stop the writer."""
        self._reader.close()
        await self._outbox.close(timeout)

    def _lost(self, exc: BaseException) -> None:
        log.info("pi: stdout is gone (%s)", exc)
        self._on_lost()
