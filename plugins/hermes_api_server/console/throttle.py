"""Console sign-in throttling: a client address that typed too many wrong keys within a window
is refused for a while, whatever key it sends next (docs/console.md#security-model)."""

from __future__ import annotations

import math
import time
from collections import deque

from hermes_api_server.errors import ApiError

MAX_ADDRESSES = 10_000


class SignInThrottle:
    """Wrong-key sign-ins per client address, in a sliding window, in memory.

    :param max_failures: wrong keys an address may send within ``window_s`` before it is refused.
    :param window_s: how long a wrong key counts against its address.
    """

    def __init__(self, max_failures: int, window_s: float) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self._failures: dict[str, deque[float]] = {}

    def check(self, address: str) -> None:
        """Refuse a sign-in from an address that used up its wrong keys.

        :raises ApiError: 429 ``rate_limit_exceeded`` with ``Retry-After`` (whole seconds until
            its oldest counted failure leaves the window).
        """
        failures = self._recent(address)
        if failures is None or len(failures) < self.max_failures:
            return
        wait = max(1, math.ceil(failures[0] + self.window_s - time.monotonic()))
        raise ApiError(
            429,
            "rate_limit_exceeded",
            f"Too many wrong keys from this address; try again in {wait} s",
            headers={"Retry-After": str(wait)},
        )

    def failed(self, address: str) -> None:
        """Count a wrong key against an address."""
        failures = self._recent(address)
        if failures is None:
            if len(self._failures) >= MAX_ADDRESSES:
                self._prune()
            failures = self._failures.setdefault(address, deque())
        failures.append(time.monotonic())

    def succeeded(self, address: str) -> None:
        """Forget an address's wrong keys once it signed in."""
        self._failures.pop(address, None)

    def _recent(self, address: str) -> deque[float] | None:
        failures = self._failures.get(address)
        if failures is None:
            return None
        cutoff = time.monotonic() - self.window_s
        while failures and failures[0] <= cutoff:
            failures.popleft()
        if not failures:
            del self._failures[address]
            return None
        return failures

    def _prune(self) -> None:
        """Drop addresses with nothing left in the window; if still full, the stalest ones."""
        for address in list(self._failures):
            self._recent(address)
        while len(self._failures) >= MAX_ADDRESSES:
            stalest = min(self._failures, key=lambda a: self._failures[a][-1])
            del self._failures[stalest]
