"""A scenario's faults on ``hermes acp`` (docs/reference/scenarios.md#faults-on-stdio).

The peer's writer starts before the kernel, so before anyone knows whether the model is a
scenario with faults: ``initialize`` is answered first (docs/reference/acp.md#start-up). Once the
kernel is ready, the first request that waited for it arms the scenario's faults on the running
peer (``RpcPeer.arm_frame_hook``); from then on every frame the agent sends is counted, so frame 0
is the first frame after the ``initialize`` response. A ``drop`` or ``restart`` sets
:attr:`FaultArming.cut`; the serve loop then lets running turns end and exits with
``RESPAWN_EXIT_CODE`` (75).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_acp.conn import AcpConnection

log = logging.getLogger("hermes_acp")
SCENARIO_PREFIX = "mock:scenario:"
#: How long a process a fault cut waits for running turns before it shuts down anyway.
RESPAWN_WAIT_S = 60.0
#: The exit code after a scenario fault cut the output (``hermes_core.scenarios.RESPAWN_EXIT_CODE``).
RESPAWN_EXIT_CODE = 75


class FaultArming:
    """Arms a scenario's frame faults on the connection's peer, once, when the kernel is ready.

    :param data_dir: the data directory, whose ``scenario-faults.json`` keeps the counts.
    """

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._done = False
        #: Set once a ``drop`` or ``restart`` fault cut the output.
        self.cut = asyncio.Event()

    def arm(self, conn: AcpConnection) -> None:
        """Arm the faults of the configured scenario, if any (only the first call does anything).

        :param conn: the connection, whose kernel is ready and whose peer is running.
        """
        if self._done or conn.peer is None:
            return
        self._done = True
        model = conn.kernel.settings.model or ""
        if not model.startswith(SCENARIO_PREFIX):
            return
        from hermes_core import scenarios  # only a scenario brings faults

        counter = scenarios.frame_faults(model, "acp", data_dir=self._data_dir)
        if counter is None:
            return
        loop = asyncio.get_running_loop()

        def on_cut() -> None:  # on the writer thread
            loop.call_soon_threadsafe(self.cut.set)

        conn.peer.arm_frame_hook(scenarios.StdioFaultHook(counter, on_cut, "acp"))
        log.info("scenario faults armed for %s", model[len(SCENARIO_PREFIX) :])


async def until_idle(conn: AcpConnection, limit_s: float) -> None:
    """Wait (at most ``limit_s``) until no prompt of the connection is still unanswered.

    :param conn: the connection.
    :param limit_s: the bound, in seconds.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    while conn.busy() and loop.time() < deadline:
        await asyncio.sleep(0.05)
