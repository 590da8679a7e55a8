"""One warning per Redis outage, not one per retry.

The writer, the heartbeat and the control reader each retry about twice a second while Redis is
away; logging every failure would bury the log (three lines a second per instance). Each loop
keeps an :class:`Outage`: the first failure is a warning, the rest are debug lines, and the first
success afterwards says how long it lasted.
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger("hermes.redis")


class Outage:
    """The failure state of one retrying loop.

    :param what: what the loop does, for the messages (``"writing run events"``).
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self.since: float | None = None
        self.failures = 0

    def failed(self, exc: BaseException) -> None:
        """Note a failed attempt: a warning for the first of an outage, debug after that."""
        self.failures += 1
        if self.since is None:
            self.since = time.monotonic()
            log.warning(
                "run bus: %s failed (%s: %s); retrying until Redis answers",
                self.what,
                type(exc).__name__,
                exc,
            )
        else:
            log.debug("run bus: %s failed again (%s)", self.what, exc)

    def succeeded(self) -> None:
        """Note a successful attempt; after an outage, say it is over."""
        if self.since is not None:
            log.warning(
                "run bus: %s works again after %.1f s (%d failed attempts)",
                self.what,
                time.monotonic() - self.since,
                self.failures,
            )
            self.since = None
            self.failures = 0
