"""A run's durable record ends once (issue 29): on either store, the first terminal status written
stays — a later terminal one (another instance's idea of the end) and a late running one are
refused, and the writer is told so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_api_server.records import ApiRecords
from hermes_api_server.responses_store import ResponseStore


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ApiRecords]:
    if request.param == "sqlite":
        records = ResponseStore(tmp_path / "api_server.sqlite3", 100)
        await records.open()
        yield records
        await records.close()
        return
    from hermes_api_server.responses_store_pg import PgResponseStore
    from tests.pg_schema import fresh_schema
    from tests.services import postgres_dsn

    postgres_dsn()
    async with fresh_schema() as dsn:
        pg = PgResponseStore(dsn, 100)
        await pg.open()
        try:
            yield pg
        finally:
            await pg.close()


async def test_the_first_terminal_status_of_a_run_stays(store: ApiRecords) -> None:
    lost = {"status": "failed", "error_code": "owner_lost", "terminal_event": {"seq": 130}}
    assert await store.put_run("run_1", "p1", {"status": "running"}, False) is True
    assert await store.put_run("run_1", "p1", {"status": "running", "last_seq": 7}, False) is True
    assert await store.put_run("run_1", "p1", lost, True) is True
    late = {"status": "completed", "terminal_event": {"seq": 32}}
    assert await store.put_run("run_1", "p1", late, True) is False
    assert await store.put_run("run_1", "p1", {"status": "running"}, False) is False
    assert await store.get_run("run_1") == ("p1", lost)
    assert await store.non_terminal_runs() == []
