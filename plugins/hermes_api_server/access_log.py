"""The access log's lines leave in batches: one write for every line of a short window
(docs/protocols/api-server.md#limits-and-browser-cors).

Each ``hermes.api.access`` line used to be written to stderr on its own, at the end of its
request. A write to a pipe wakes whoever reads it, and on a loaded machine that system call cost
the event loop about as much as a whole SSE frame: one more write per request on the loop that
serves every stream. While the server runs, the lines are kept for at most :data:`FLUSH_S` and
then written together, with the same text and order, through the handlers they would have
reached anyway (the CLI's stderr handler: one write for the batch). A line never waits longer
than that, the batch is written when the server stops, and outside a running loop a line is
passed on at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

#: Longest an access line waits for the lines that follow it.
FLUSH_S = 0.05
#: A batch this long is written at once, whatever its age.
MAX_LINES = 256


class BatchedAccessLog(logging.Handler):
    """Collect a logger's records and pass them on, together, to the handlers above it.

    Installed on ``logger`` with its propagation turned off while it is installed; the
    records go to the handlers propagation would have found (looked up at each flush, so a
    handler added later is served too). A stream handler gets the whole batch as one write.
    """

    def __init__(self, logger: logging.Logger, flush_s: float = FLUSH_S) -> None:
        super().__init__(logging.NOTSET)
        self.logger = logger
        self.flush_s = flush_s
        self._pending: list[logging.LogRecord] = []
        self._timer: asyncio.TimerHandle | None = None
        self._propagated = logger.propagate

    def install(self) -> None:
        """Take the logger's records from now on."""
        self.logger.addHandler(self)
        self.logger.propagate = False

    def uninstall(self) -> None:
        """Write what is pending and give the logger back its own propagation."""
        self.flush()
        self.logger.removeHandler(self)
        self.logger.propagate = self._propagated

    def emit(self, record: logging.LogRecord) -> None:
        """Keep ``record`` for the next batch (written at once when no loop runs here)."""
        self._pending.append(record)
        if len(self._pending) >= MAX_LINES:
            self.flush()
            return
        if self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
                return
            self._timer = loop.call_later(self.flush_s, self.flush)

    def flush(self) -> None:
        """Pass every pending record on, a stream handler's share in one write."""
        with self.lock or contextlib.nullcontext():  # the timer's flush races no emit of another thread
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            records, self._pending = self._pending, []
        if not records:
            return
        for handler in _propagation_handlers(self.logger):
            if isinstance(handler, logging.StreamHandler):
                _write_batch(handler, records)
            else:
                for record in records:
                    if record.levelno >= handler.level:
                        handler.handle(record)


def _propagation_handlers(logger: logging.Logger) -> list[logging.Handler]:
    """The handlers a record of ``logger`` reaches by propagation (its own left out)."""
    found: list[logging.Handler] = []
    current = logger.parent
    while current is not None:
        found.extend(current.handlers)
        if not current.propagate:
            break
        current = current.parent
    if not found and logging.lastResort is not None:
        found.append(logging.lastResort)
    return found


def _write_batch(handler: logging.StreamHandler, records: list[logging.LogRecord]) -> None:
    """Write the records ``handler`` accepts as one text, under its lock, as its ``emit`` would."""
    try:
        text = "".join(
            handler.format(record) + handler.terminator
            for record in records
            if record.levelno >= handler.level and handler.filter(record)
        )
    except Exception:
        for record in records:
            handler.handleError(record)
        return
    if not text:
        return
    handler.acquire()
    try:
        handler.stream.write(text)
        with contextlib.suppress(Exception):
            handler.flush()
    except Exception:
        handler.handleError(records[-1])
    finally:
        handler.release()
