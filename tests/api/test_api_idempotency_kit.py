"""Run creations under way: a twin gets the first creation's id, or its failure."""

from __future__ import annotations

import asyncio

import pytest


async def test_in_flight_hands_the_id_or_the_failure_to_twins() -> None:
    from hermes_api_server.idempotency import InFlight

    flight = InFlight()
    assert await flight.wait(("p", "k")) is None
    release = asyncio.Event()

    async def create() -> None:
        with flight.claim(("p", "k")) as created:
            await release.wait()
            created("run_1")

    task = asyncio.create_task(create())
    await asyncio.sleep(0)
    twin = asyncio.create_task(flight.wait(("p", "k")))
    await asyncio.sleep(0)
    assert not twin.done()
    release.set()
    await task
    assert await twin == "run_1"
    assert await flight.wait(("p", "k")) is None  # the claim ends with its block

    async def failing() -> None:
        with flight.claim(("p", "k")):
            await release.wait()
            raise ValueError("lease taken")

    release.clear()
    task = asyncio.create_task(failing())
    await asyncio.sleep(0)
    twin = asyncio.create_task(flight.wait(("p", "k")))
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(ValueError, match="lease taken"):
        await task
    with pytest.raises(ValueError, match="lease taken"):
        await twin
    with flight.claim(None) as created:  # no key: nothing is claimed
        created("ignored")
    assert await flight.wait(("p", "k")) is None
