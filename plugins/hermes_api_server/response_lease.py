"""Who runs a background response (docs/reference/api-server.md#background-responses).

The instance that runs a background response holds a liveness lease in the kernel's records
(namespace ``api.responses_owner``, key the response id, scope its principal): a claim under an
owner string naming its process (``kernel.records.new_owner()``) that it touches every
``bus.heartbeat_s``. Like a run's owner on the run bus, an owner silent for ``bus.owner_grace_s``
counts as gone, and so at once does one that is a dead process of this host (a ``kill -9``): an
instance that takes the lease over (an atomic claim, so exactly one instance wins) settles the
response ``failed`` from the session's event log. Instances do that when asked about the
response (``GET``, a stream, a cancel) and, without anyone asking, at start-up and every
sweep (:mod:`hermes_api_server.response_sweep`). The end is committed on the lease: the owner
releases it with the final object, and only then writes the object; an owner whose lease was
taken over writes nothing and takes the ending the other instance committed. Settling instances
do the same, so an end committed on the lease but not yet copied into the response (its writer
died in between) is copied by whoever asks next.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from hermes_core import Expect

if TYPE_CHECKING:
    from collections.abc import Callable

    from hermes_api_server.state import ServerState
    from hermes_core import RecordSpace

log = logging.getLogger("hermes.api.responses")
NAMESPACE = "api.responses_owner"
#: How long a lease record is kept after its last write (a released one carries the response's
#: final object; a held one whose owner died and that nobody asked about goes with the sweep).
KEPT_S = 86400.0


def _space(state: ServerState) -> RecordSpace:
    return state.kernel.records.space(NAMESPACE)


def _token(state: ServerState) -> str:
    return state.kernel.records.new_owner()


class OwnerLease:
    """This instance's hold on a background response it runs; renewed until :meth:`commit`."""

    def __init__(
        self, space: RecordSpace, key: str, token: str, epoch: int, heartbeat_s: float, grace_s: float
    ) -> None:
        self._space = space
        self._key = key
        self._expect = Expect(owner=token, epoch=epoch)
        self._heartbeat_s = heartbeat_s
        #: Events are shown only this long after the last renewal that went through: another
        #: instance takes the lease over only after a whole grace period without one.
        self._vouched_s = grace_s / 2
        self._renewed = time.monotonic()
        #: Set once a renewal found the lease taken over (the response was settled elsewhere).
        self.lost = False
        #: Called once when another instance asked for a cancel (:func:`request_cancel`).
        self.on_cancel: Callable[[], None] | None = None
        self._cancelled = False
        self._task = asyncio.create_task(self._beat(), name=f"hermes-response-lease-{key}")

    async def _renew(self) -> None:
        started = time.monotonic()
        try:
            record = await self._space.touch(self._key, expect=self._expect, ttl_s=KEPT_S)
        except Exception:
            log.warning("renewing the lease of response %s failed", self._key, exc_info=True)
            return
        if record is None:
            if not self.lost:
                log.warning("response %s was settled by another instance (lease taken over)", self._key)
            self.lost = True
        else:
            self._renewed = max(self._renewed, started)
            value = record.value
            if isinstance(value, dict) and value.get("cancel") and not self._cancelled:
                self._cancelled = True
                if self.on_cancel is not None:
                    self.on_cancel()

    async def _beat(self) -> None:
        while not self.lost:
            await asyncio.sleep(self._heartbeat_s)
            await self._renew()

    async def vouched(self) -> bool:
        """Tell whether this instance may show more events: the lease is still its own and was
        renewed recently (else it is renewed now, waiting while the records are away)."""
        while not self.lost and time.monotonic() - self._renewed >= self._vouched_s:
            await self._renew()
            if not self.lost and time.monotonic() - self._renewed >= self._vouched_s:
                await asyncio.sleep(self._heartbeat_s)
        return not self.lost

    async def stop(self) -> None:
        """Stop renewing (the lease goes stale after the grace period)."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task

    async def commit(self, final: dict[str, Any]) -> dict[str, Any] | None:
        """Commit ``final`` as the response's end; None when committed (write it now), else the
        final object another instance committed (or None there too when nothing can be read)."""
        await self.stop()
        try:
            done = await self._space.release(
                self._key, expect=self._expect, value={"final": final}, ttl_s=KEPT_S
            )
        except Exception:
            log.warning("committing the end of response %s failed", self._key, exc_info=True)
            return None  # write it anyway: the record may still be ours
        if done is not None:
            return None
        record = await self._space.get(self._key)
        value = record.value if record is not None else None
        theirs = value.get("final") if isinstance(value, dict) else None
        return theirs if isinstance(theirs, dict) else None


async def hold(state: ServerState, response_id: str, principal: str) -> OwnerLease | None:
    """Take the lease of a new background response (None when it is held already)."""
    space = _space(state)
    token = _token(state)
    claim = await space.claim(response_id, {}, owner=token, scope=principal, ttl_s=KEPT_S)
    if not claim.won:  # a fresh id: cannot happen; run without a lease rather than fail
        log.warning("response %s: its lease is held already", response_id)
        return None
    bus = state.kernel.settings.bus
    return OwnerLease(space, response_id, token, claim.record.epoch, bus.heartbeat_s, bus.owner_grace_s)


async def take_over(
    state: ServerState, response_id: str, principal: str
) -> tuple[str | None, dict[str, Any] | None]:
    """Try to take the settling of a background response whose owner may be gone.

    :returns: ``(token, None)`` when this instance now holds the lease (its owner was silent for
        ``bus.owner_grace_s``, is a dead process of this host, or never took one): settle, then
        :func:`settled`; ``(None, final)``
        when the end is committed on the lease already; ``(None, None)`` while its owner lives.
    """
    space = _space(state)
    token = _token(state)
    claim = await space.claim(
        response_id,
        {},
        owner=token,
        scope=principal,
        ttl_s=KEPT_S,
        stale_after_s=state.kernel.settings.bus.owner_grace_s,
        take_gone=True,
    )
    if claim.won:
        return token, None
    value = claim.record.value
    final = value.get("final") if claim.record.owner is None and isinstance(value, dict) else None
    return None, final if isinstance(final, dict) else None


async def settled(state: ServerState, response_id: str, token: str, final: dict[str, Any]) -> bool:
    """Commit the end this instance settled; False when another instance took the lease meanwhile."""
    done = await _space(state).release(
        response_id, expect=Expect(owner=token), value={"final": final}, ttl_s=KEPT_S
    )
    return done is not None


async def request_cancel(state: ServerState, response_id: str) -> bool:
    """Ask the instance running a background response to cancel it (it reads the request with
    its next renewal); False when no live owner holds its lease."""
    space = _space(state)
    record = await space.get(response_id)
    if record is None or record.owner is None:
        return False
    asked = await space.put(
        response_id,
        {"cancel": True},
        scope=record.scope,
        ttl_s=KEPT_S,
        expect=Expect(owner=record.owner, epoch=record.epoch),
    )
    return asked is not None
