"""A run's durable record ends once (issue 29): on every storage backend, the first terminal
status written stays — a later terminal one (another instance's idea of the end) and a late
running one are refused, and the writer is told so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_api_server.kernel_records import KernelApiRecords
from tests.api.records_world import api_records


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[list[KernelApiRecords]]:
    if request.param != "postgres":
        async with api_records(request.param, tmp_path / "hermes.sqlite3", count=2) as handles:
            yield handles
        return
    from tests.pg_schema import fresh_schema
    from tests.services import postgres_dsn

    postgres_dsn()
    async with fresh_schema() as dsn, api_records("postgres", dsn, count=2) as handles:
        yield handles


async def test_the_first_terminal_status_of_a_run_stays(stores: list[KernelApiRecords]) -> None:
    owner, reaper = stores
    lost = {"status": "failed", "error_code": "owner_lost", "terminal_event": {"seq": 130}}
    assert await owner.put_run("run_1", "p1", {"status": "running"}, False) is True
    assert await owner.put_run("run_1", "p1", {"status": "running", "last_seq": 7}, False) is True
    assert await reaper.put_run("run_1", "p1", lost, True) is True
    late = {"status": "completed", "terminal_event": {"seq": 32}}
    assert await owner.put_run("run_1", "p1", late, True) is False
    assert await owner.put_run("run_1", "p1", {"status": "running"}, False) is False
    assert await owner.get_run("run_1") == ("p1", lost)
    assert await reaper.get_run("run_1") == ("p1", lost)
    assert await owner.non_terminal_runs() == []


async def test_a_run_first_stored_ended_refuses_every_later_status(stores: list[KernelApiRecords]) -> None:
    owner, reaper = stores
    lost = {"status": "failed", "error_code": "owner_lost"}
    assert await reaper.put_run("run_2", "p1", lost, True) is True
    assert await owner.put_run("run_2", "p1", {"status": "running"}, False) is False
    assert await owner.put_run("run_2", "p1", {"status": "completed"}, True) is False
    assert await owner.get_run("run_2") == ("p1", lost)
    assert await owner.non_terminal_runs() == []
