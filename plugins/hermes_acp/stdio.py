"""stdio hygiene for ``hermes acp`` (docs/reference/acp.md#stdio-hygiene-and-shutdown): the input reader and
the log handlers.

Input: :class:`PrimedReader` lets the factory pick up bytes already waiting on stdin before the
kernel's start-up work gets the event loop, so the ``initialize`` reply never waits for it.
Logging: everything goes to ``<data dir>/logs/acp.log`` (rotating, redacted); stderr only gets
warnings and errors, one line each and at most :data:`STDERR_LINE_CAP` per process.
"""

from __future__ import annotations

import logging
import os
import select
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_acp.conn import AcpConnection
    from hermes_core.rpc import RpcPeer

STDERR_LINE_CAP = 100
LOG_BYTES = 5 * 1024 * 1024
LOG_BACKUPS = 3


class PrimedReader:
    """Read chunks from a descriptor, starting with bytes read before the loop got busy.

    The reading itself is the shared peer's :class:`hermes_core.rpc.FdReader`; this only puts
    the primed bytes first.
    """

    def __init__(self, fd: int, primed: bytes = b"") -> None:
        """Wrap a descriptor.

        :param fd: the readable descriptor (stdin), owned by the caller.
        :param primed: bytes already read from it.
        """
        from hermes_core import rpc

        self._primed = primed
        self._inner = rpc.FdReader(fd)

    @staticmethod
    def prime(fd: int, wait_s: float, limit: int = 1 << 20) -> bytes:
        """Read what is waiting on ``fd`` within ``wait_s`` seconds, without blocking longer.

        :param fd: the descriptor.
        :param wait_s: how long to wait for the first byte.
        :param limit: the most bytes to take.
        :returns: the bytes read (empty if nothing came; EOF also gives empty).
        """
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return b""
            ready, _, _ = select.select([fd], [], [], wait_s)
            if not ready:
                return b""
            return os.read(fd, limit)
        except (OSError, ValueError):
            return b""

    def push(self, data: bytes) -> None:
        """Put bytes in front of what is still to be read.

        :param data: bytes already taken from the descriptor.
        """
        self._primed = data + self._primed

    async def read(self, n: int = -1) -> bytes:
        """Return up to ``n`` bytes, ``b""`` at end of input.

        :param n: the most bytes wanted.
        :returns: the bytes.
        """
        if self._primed:
            data, self._primed = self._primed, b""
            return data
        return await self._inner.read(n)

    def close(self) -> None:
        """Stop reading and restore the descriptor's blocking mode."""
        self._inner.close()


def answer_waiting_initialize(conn: AcpConnection, peer: RpcPeer, data: bytes) -> bytes:
    """Answer a well-formed ``initialize`` at the head of ``data`` at once; return the rest.

    Anything else is left for the peer (see :func:`hermes_acp.static.split_initialize`).

    :param conn: the connection (its fast path builds the answer).
    :param peer: the peer that writes the answer.
    :param data: bytes read from stdin before the peer started.
    :returns: the bytes the peer still has to read.
    """
    from hermes_acp.static import split_initialize
    from hermes_core.rpc import RpcError

    found = split_initialize(data)
    if found is None:
        return data
    message, rest = found
    try:
        response = conn.fast_path(message)
    except RpcError as exc:
        response = {"error": exc.to_error()}
    if response is None:
        return data
    peer.send({"jsonrpc": "2.0", "id": message["id"], **response})
    return rest


class BoundedStderrHandler(logging.Handler):
    """Write warnings and errors to stderr, one line each, at most ``cap`` lines per process."""

    def __init__(self, log_path: Path, cap: int = STDERR_LINE_CAP) -> None:
        """Create the handler.

        :param log_path: the log file named in the last line once the cap is reached.
        :param cap: the number of lines allowed.
        """
        super().__init__(logging.WARNING)
        self._cap = cap
        self._count = 0
        self._log_path = log_path

    def emit(self, record: logging.LogRecord) -> None:
        """Write one line for the record (or the pointer line, or nothing past the cap).

        :param record: the record.
        """
        if self._count > self._cap:
            return
        self._count += 1
        if self._count > self._cap:
            line = f"hermes acp: further messages only in {self._log_path}"
        else:
            text = record.getMessage().replace("\r", " ").replace("\n", " ")
            line = f"hermes acp: {record.levelname.lower()}: {text}"[:2000]
        try:
            os.write(2, (line + "\n").encode("utf-8", "backslashreplace"))
        except OSError:
            pass


def setup_logging(log_path: Path, redact: Callable[[str], str] | None) -> None:
    """Route every log record to the rotating log file and warnings to bounded stderr lines.

    :param log_path: ``<data dir>/logs/acp.log``.
    :param redact: the kernel's redactor, if available.
    """
    from logging.handlers import RotatingFileHandler

    from hermes_core import redact_log_handlers

    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    file_handler = RotatingFileHandler(
        log_path, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
    )
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    stderr_handler = BoundedStderrHandler(log_path)
    # jsonrpcserver logs exception text itself; that belongs in the file only (the peer's own
    # line with the error id is what stderr gets).
    stderr_handler.addFilter(lambda record: not record.name.startswith("jsonrpcserver"))
    root.addHandler(file_handler)
    root.addHandler(stderr_handler)
    if redact is not None:
        redact_log_handlers(redact, root)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
