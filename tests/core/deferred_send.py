"""A provider's request written the way aiohttp's client writes one on Python 3.11: from a task
of its own, one loop pass after the call."""

from __future__ import annotations

import asyncio


async def send_from_own_task(log: list[str], entry: str) -> None:
    """Note ``entry`` in ``log`` from a new task (the request leaving) and wait until it has run."""

    async def write() -> None:
        log.append(entry)

    await asyncio.get_running_loop().create_task(write())
