"""The API server's records in PostgreSQL through the kernel's records: two kernels (two instances)
on one database see each other's responses, names, runs and keys; eviction, retention, a late
status write and a restart behave as on every backend (tests/api/records_checks.py); a server
restart costs the records at most one failed write."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from hermes_core import StorageUnavailable
from tests.api import records_checks
from tests.api.chat_index_checks import index_rows_behave, keys_expire
from tests.api.records_world import api_records
from tests.pg_schema import drop_connections, own_connections

Check = Callable[[str, Any], Coroutine[Any, Any, None]]


@pytest.mark.parametrize(
    "check", records_checks.CHECKS + records_checks.DURABLE_CHECKS, ids=lambda c: c.__name__
)
async def test_on_postgres(check: Check, pg_dsn: str) -> None:
    await check("postgres", pg_dsn)


async def test_the_records_live_in_the_kernels_table(pg_dsn: str) -> None:
    import psycopg

    async with api_records("postgres", pg_dsn) as (store,):
        assert store.shared is True
        await store.put_run("run_1", "p1", {"run_id": "run_1", "status": "running"}, False)
    async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
        cur = await conn.execute(
            "SELECT scope FROM hermes_records WHERE namespace='api.runs' AND key='run_1'"
        )
        assert await cur.fetchall() == [("p1",)]
        cur = await conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'api\\_%%'"
            " AND table_schema = current_schema()"
        )
        assert await cur.fetchone() == (0,)  # no table of the plugin's own


async def test_a_server_restart_costs_reads_nothing_and_writes_at_most_one_failure(pg_dsn: str) -> None:
    dsn, name = own_connections(pg_dsn)  # the server drops this kernel's connections, no one else's
    async with api_records("postgres", dsn) as (store,):
        await store.put_run("run_r", "p1", {"run_id": "run_r", "status": "running"}, False)

        async def drop_all() -> None:
            await asyncio.gather(*(store.get_run("run_r") for _ in range(3)))
            assert await drop_connections(pg_dsn, name) >= 1

        await drop_all()
        assert await store.get_run("run_r") == ("p1", {"run_id": "run_r", "status": "running"})
        assert [s["run_id"] for s in await store.runs_of("p1", 5)] == ["run_r"]

        await drop_all()
        failed = 0
        for i in range(3):
            try:
                await store.put_run(f"run_w{i}", "p1", {"run_id": f"run_w{i}"}, True)
            except StorageUnavailable:
                failed += 1
        assert failed <= 1
        assert len(await store.runs_of("p1", 10)) == 1 + 3 - failed


async def test_two_instances_share_the_chat_index(pg_dsn: str) -> None:
    async with api_records("postgres", pg_dsn, count=2) as (a, b):
        await index_rows_behave(a, b)


async def test_chat_index_keys_expire_on_postgres(pg_dsn: str) -> None:
    async with api_records("postgres", pg_dsn, chat_ttl_s=1.0) as (store,):
        await keys_expire(store)
