"""Background responses settled without a reader (docs/reference/api-server.md#background-responses).

A background response whose owner died stays ``queued``/``in_progress`` in the records until an
instance takes its lease over (:mod:`hermes_api_server.response_lease`). Asking about it does
that; so does this sweep, so a poller, a dashboard or another reader of the stored object sees
it ``failed`` without first asking about that response here. Every instance sweeps at start-up
and then every :func:`interval` seconds: one bounded listing of the held leases (the running
background responses of every instance sharing the records); only leases whose holder is a dead
process of this host, or that were not renewed for ``bus.owner_grace_s``, cost more (the
take-over claim, then the settle). The claim is atomic, so with several instances sweeping one
settles each response; a live owner renews its lease and is never settled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

from hermes_api_server.response_background import settle_if_gone
from hermes_api_server.response_lease import NAMESPACE

if TYPE_CHECKING:
    from hermes_api_server.state import ServerState
    from hermes_core import StoredRecord

log = logging.getLogger("hermes.api.responses")
#: Leases read per listing (the records store's largest page).
PAGE = 1000
#: Listings per sweep at most: beyond ``PAGE * PAGES`` running background responses the oldest
#: leases wait for a later sweep (a reader asking still settles them).
PAGES = 10


def interval(state: ServerState) -> float:
    """Seconds between sweeps: half of ``bus.owner_grace_s`` (15 s by default)."""
    return state.kernel.settings.bus.owner_grace_s / 2


def _candidate(state: ServerState, record: StoredRecord, cutoff: float) -> bool:
    """Whether a held lease may have lost its owner (the take-over claim decides)."""
    if record.key in state.live_responses or record.owner is None:
        return False
    return record.updated_at <= cutoff or state.kernel.records.holder_gone(record.owner)


async def sweep(state: ServerState) -> int:
    """Settle the background responses whose owner is gone; return how many this instance
    settled (others may have settled some of the same meanwhile)."""
    space = state.kernel.records.space(NAMESPACE)
    # Lease times are on the backend's clock; a skewed local clock only delays or wastes a claim.
    cutoff = time.time() - state.kernel.settings.bus.owner_grace_s
    count = 0
    cursor: str | None = None
    for _ in range(PAGES):
        page = await space.list(held=True, limit=PAGE, cursor=cursor)
        for record in page.records:
            if not _candidate(state, record, cutoff):
                continue
            try:
                count += await _settle(state, record)
            except Exception:
                log.warning("settling background response %s failed", record.key, exc_info=True)
        cursor = page.next_cursor
        if cursor is None:
            break
    return count


async def _settle(state: ServerState, lease: StoredRecord) -> int:
    who = lease.scope
    stored = await state.store.get_response(who, lease.key)
    if stored is None:
        return 0  # deleted or evicted: its lease expires with the records sweep
    before = stored["object"].get("status")
    after = await settle_if_gone(state, who, stored)
    if before in ("queued", "in_progress") and after.get("status") not in ("queued", "in_progress"):
        log.warning("background response %s settled %s: its owner is gone", lease.key, after.get("status"))
        return 1
    return 0


class ResponseSweeper:
    """The sweep task of one instance: at start-up, then every :func:`interval` seconds."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="hermes-api-response-sweep")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        while True:
            try:
                await sweep(self.state)
            except Exception:
                log.warning("background response sweep failed", exc_info=True)
            await asyncio.sleep(interval(self.state))
