"""A scenario's faults on a stdio transport (docs/reference/scenarios.md#faults-on-stdio).

A stdio host cannot reconnect to the process it started; what it can do is start a new one and
resume. So on stdio ``drop`` and ``restart`` cut the output (the frame and every later one are
not written) and ask the transport to end the process: it lets running turns finish, so their
events are stored in the session's event log, and exits with :data:`RESPAWN_EXIT_CODE`. The
host starts the command again with the same ``HERMES_HOME`` and resumes from its cursor.
``delay`` and ``duplicate`` work as on the other transports.

Two shapes of the same faults: :class:`FaultyStdout` is a writer the TUI gateway builds its peer
on; :class:`StdioFaultHook` is a :class:`hermes_core.rpc.FrameHook` that ``hermes acp`` arms on a
peer already running, once the kernel says which scenario it plays.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Sequence

from hermes_core.scenarios.faults import FrameCounter

#: The exit code of a stdio transport that a ``drop`` or ``restart`` fault ended (EX_TEMPFAIL).
RESPAWN_EXIT_CODE = 75

log = logging.getLogger("hermes.scenarios")


class FaultyStdout:
    """Write newline-delimited frames to a descriptor, applying a scenario's frame faults.

    It is a ``FrameWriter`` (``write`` then ``drain``) for :class:`hermes_core.rpc.RpcPeer`.

    :param fd: the descriptor frames go to (the transport's protected stdout).
    :param counter: the frame counter of this connection.
    :param on_cut: called once when a ``drop`` or ``restart`` fault cut the output.
    :param label: names the transport in the log line of each injected fault.
    """

    def __init__(self, fd: int, counter: FrameCounter, on_cut: Callable[[], None], label: str) -> None:
        self._fd = fd
        self._counter = counter
        self._on_cut = on_cut
        self._label = label
        self._pending: list[bytes] = []
        self.cut = False

    def write(self, data: bytes) -> None:
        """Buffer bytes (whole frames) until :meth:`drain`."""
        self._pending.append(data)

    async def drain(self) -> None:
        """Write the buffered frames one by one, each after asking the counter for a fault."""
        pending, self._pending = self._pending, []
        for chunk in pending:
            for frame in chunk.split(b"\n"):
                if frame:
                    await self._send(frame + b"\n")

    async def _send(self, frame: bytes) -> None:
        if self.cut:
            return
        fault = self._counter.next_frame()
        if fault is None:
            self._write(frame)
            return
        log.warning("%s: injecting fault %s before frame %d", self._label, fault.action, self._counter.sent)
        if fault.action == "delay":
            await asyncio.sleep(fault.delay_ms / 1000)
            self._write(frame)
        elif fault.action == "duplicate":
            self._write(frame)
            self._write(frame)
        else:  # drop or restart: this frame and the later ones are never written
            self.cut = True
            self._on_cut()

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]


class StdioFaultHook:
    """A scenario's frame faults as a :class:`hermes_core.rpc.FrameHook` (``peer.arm_frame_hook``).

    It runs on the peer's writer thread: ``delay`` sleeps there (holding back this frame and the
    later ones, never the event loop); ``duplicate`` writes the frame twice; ``drop`` and
    ``restart`` withhold the frame and every later one and call ``on_cut`` once.

    :param counter: the frame counter of this connection.
    :param on_cut: called once, on the writer thread, when a ``drop`` or ``restart`` cut the
        output; hand it to the event loop with ``loop.call_soon_threadsafe``.
    :param label: names the transport in the log line of each injected fault.
    """

    def __init__(self, counter: FrameCounter, on_cut: Callable[[], None], label: str) -> None:
        self._counter = counter
        self._on_cut = on_cut
        self._label = label
        self.cut = False

    def __call__(self, frame: bytes) -> Sequence[bytes]:
        """Return what to write for one frame (nothing once the output was cut)."""
        if self.cut:
            return ()
        fault = self._counter.next_frame()
        if fault is None:
            return (frame,)
        log.warning("%s: injecting fault %s before frame %d", self._label, fault.action, self._counter.sent)
        if fault.action == "delay":
            time.sleep(fault.delay_ms / 1000)
            return (frame,)
        if fault.action == "duplicate":
            return (frame, frame)
        self.cut = True  # drop or restart: this frame and the later ones are never written
        self._on_cut()
        return ()
