"""A refined title is written under the session's writer lease, on PostgreSQL, whatever happened
to the session while the model was being asked: released (the lease is taken for the write),
taken by another process (the refinement is dropped, nothing written), or taken over while still
open here (the refusal is handled; no task exception goes unretrieved). The title comes from the
``openai`` provider against a fake upstream that holds the title answer until the test lets it go.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hermes_core import Kernel, Session
from hermes_postgres.plugin import make_storage
from hermes_postgres.store import PostgresStorage
from tests.core.vendor_kernels import vendor_kernel
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import OPENAI
from tests.timing import eventually

FIRST = "please fix the failing build on main"
DERIVED = "please fix the failing build on"
OTHER = "otherhost:4242:1:1:abcd1234"


class HeldTitle:
    """A fake upstream answering the turn at once and the title request when released."""

    def __init__(self, upstream: FakeUpstream) -> None:
        self.release = asyncio.Event()
        self.asked = asyncio.Event()
        turn = OPENAI.reply("I will fix it.")
        title = OPENAI.reply('"Build repair"')
        calls = 0

        async def handler(request: web.Request) -> web.StreamResponse:
            nonlocal calls
            calls += 1
            frames = turn if calls == 1 else title
            if calls > 1:
                self.asked.set()
                await self.release.wait()
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for frame in frames:
                await response.write(frame)
            await response.write_eof()
            return response

        upstream.on("POST", OPENAI.chat_path, handler)


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as up:
        yield up


def pg_kernel(upstream: FakeUpstream, dsn: str) -> Kernel:
    return vendor_kernel(
        OPENAI,
        upstream,
        plugins=("tools", "postgres"),
        titles={"refine": True},
        storage={"backend": "postgres", "dsn": dsn},
    )


async def first_turn(kernel: Kernel, tmp_path: Path) -> Session:
    session = await kernel.open_session("s-title", source="api", owner="me", cwd=tmp_path)
    outcome = await (await session.submit(FIRST, owner="me")).outcome
    assert outcome.reason == "stop", outcome
    return session


async def other_process(dsn: str) -> PostgresStorage:
    store: PostgresStorage = make_storage(dsn=dsn, pool_size=2, pool_timeout_s=10.0)
    await store.open()
    return store


async def refinement_done(kernel: Kernel) -> None:
    async def idle() -> bool:
        return not [t for t in kernel.background_tasks if t.get_name().startswith("hermes-title-")]

    await eventually(idle, what="the title refinement to end")


async def stored(store: PostgresStorage) -> tuple[Any, Any]:
    record = await store.get_session("s-title")
    assert record is not None
    return record.title, record.title_origin


async def test_a_title_refined_after_the_release_is_written_under_a_lease_taken_for_it(
    upstream: FakeUpstream, pg_dsn: str, tmp_path: Path
) -> None:
    held = HeldTitle(upstream)
    kernel = pg_kernel(upstream, pg_dsn)
    other = await other_process(pg_dsn)
    try:
        async with kernel.running():
            session = await first_turn(kernel, tmp_path)
            await held.asked.wait()
            await session.close()  # what the API server does when the run's turn ends
            assert await stored(other) == (DERIVED, "derived")
            held.release.set()
            await refinement_done(kernel)
            assert await stored(other) == ("Build repair", "refined")
            # The lease taken for the write is given back: another process opens it at once.
            assert await other.acquire_lease("s-title", OTHER, 30) is None
    finally:
        await other.close()


async def test_a_title_refined_while_another_process_holds_the_lease_is_dropped(
    upstream: FakeUpstream, pg_dsn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    held = HeldTitle(upstream)
    kernel = pg_kernel(upstream, pg_dsn)
    other = await other_process(pg_dsn)
    try:
        async with kernel.running():
            session = await first_turn(kernel, tmp_path)
            await held.asked.wait()
            await session.close()
            # The conversation's next turn went to another instance, which holds the lease now.
            assert await other.acquire_lease("s-title", OTHER, 30) is None
            with caplog.at_level("INFO", logger="hermes.titles"):
                held.release.set()
                await refinement_done(kernel)
            assert await stored(other) == (DERIVED, "derived")
            assert "refined title of s-title dropped" in caplog.text
            assert await other.renew_lease("s-title", OTHER, 30) is True
    finally:
        await other.close()


async def test_a_refusal_of_the_title_write_is_handled_when_the_lease_moved_away(
    upstream: FakeUpstream, pg_dsn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    held = HeldTitle(upstream)
    kernel = pg_kernel(upstream, pg_dsn)
    other = await other_process(pg_dsn)
    try:
        async with kernel.running():
            await first_turn(kernel, tmp_path)
            await held.asked.wait()
            # Still open here, but another process took the lease over (this one was presumed
            # dead): the fenced write is refused with LeaseLost.
            assert await other.acquire_lease("s-title", OTHER, 30, take_over=kernel.lease_owner) is None
            with caplog.at_level("WARNING", logger="hermes.titles"):
                held.release.set()
                await refinement_done(kernel)
            assert await stored(other) == (DERIVED, "derived")
            assert "refined title of s-title could not be stored" in caplog.text
            # The suite-wide guard (tests/task_guard.py) fails this test if the refusal escaped
            # as a task exception nobody retrieved.
    finally:
        await other.close()
