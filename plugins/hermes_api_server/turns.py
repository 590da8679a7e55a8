"""Drive one core turn for an HTTP request: pump its events, abandon it on disconnect (§3.6)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from hermes_core import ImagePart, TurnCompleted

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hermes_core import Event, Kernel, Part, Session, Turn

KEEPALIVE_S = 10.0
_END = object()


class EventPump:
    """Copy a turn's events into a local queue, so readers can wait with a timeout and batch."""

    def __init__(self, turn: Turn) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task = asyncio.create_task(self._run(turn), name="hermes-api-pump")

    async def _run(self, turn: Turn) -> None:
        try:
            async for event in turn.events():
                self.queue.put_nowait(event)
        finally:
            self.queue.put_nowait(_END)

    async def batches(self, keepalive_s: float = KEEPALIVE_S) -> AsyncIterator[list[Event] | None]:
        """Yield lists of ready events, or None after ``keepalive_s`` of silence."""
        done = False
        while not done:
            try:
                first = await asyncio.wait_for(self.queue.get(), keepalive_s)
            except TimeoutError:
                yield None
                continue
            batch: list[Event] = []
            item = first
            while True:
                if item is _END:
                    done = True
                    break
                batch.append(item)
                if isinstance(item, TurnCompleted):
                    done = True
                    break
                try:
                    item = self.queue.get_nowait()
                except asyncio.QueueEmpty:
                    break
            if batch:
                yield batch

    async def close(self) -> None:
        """Stop pumping."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task


async def abandon(session: Session, turn: Turn) -> None:
    """Interrupt (or unqueue) a turn nobody is reading any more, and wait for it to settle."""
    if turn.outcome.done():
        return
    if turn.position > 0:
        session.cancel_queued(turn.item_id)
    else:
        await session.interrupt(reason="user")
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.shield(turn.outcome), 5)


def derived_session_id(system: str, first_user: str, principal: str | None) -> str:
    """Return ``api-`` + 16 hex of sha256(system + newline + first user text) (§3.5)."""
    seed = f"{system}\n{first_user}"
    if principal is not None:
        seed = f"{principal}\0{seed}"
    return "api-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]


async def image_warning(kernel: Kernel, model_ref: str, parts: Sequence[Part]) -> dict[str, str]:
    """Return ``X-Hermes-Warning: images_dropped`` when images go to a model without vision."""
    if not model_ref or not any(isinstance(p, ImagePart) for p in parts):
        return {}
    try:
        resolved = await kernel.resolve_model(model_ref)
    except Exception:
        return {}
    if resolved.info is not None and resolved.info.vision:
        return {}
    return {"X-Hermes-Warning": "images_dropped"}
