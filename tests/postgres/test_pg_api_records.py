"""The API server's records in PostgreSQL: two stores (two instances) on one database see each
other's responses, names, runs and keys; eviction, retention and a late status write behave."""

from __future__ import annotations

import asyncio

from hermes_api_server.responses_store_pg import PgResponseStore
from hermes_core import StorageUnavailable
from tests.pg_schema import drop_connections, own_connections


async def test_two_instances_share_responses_names_runs_and_keys(pg_dsn: str) -> None:
    a, b = PgResponseStore(pg_dsn, 100), PgResponseStore(pg_dsn, 100)
    await asyncio.gather(a.open(), b.open())  # creating the tables together is safe
    try:
        await a.put_response("resp_1", "p1", "sess_1", 7, "be brief", {"id": "resp_1", "n": 1}, "team")
        got = await b.get_response("p1", "resp_1")
        assert got == {
            "session_id": "sess_1",
            "through_row_id": 7,
            "instructions": "be brief",
            "object": {"id": "resp_1", "n": 1},
            "input": None,
        }
        assert await b.get_response("p2", "resp_1") is None  # another key sees nothing
        assert await b.conversation("p1", "team") == "resp_1"
        assert await b.conversation("p2", "team") is None

        await a.put_run("run_1", "p1", {"run_id": "run_1", "status": "running"}, False)
        assert await b.get_run("run_1") == ("p1", {"run_id": "run_1", "status": "running"})
        assert [s["run_id"] for s in await b.runs_of("p1", 10)] == ["run_1"]
        assert [r[0] for r in await b.non_terminal_runs()] == ["run_1"]

        await b.put_run_key("p1", "key-1", "fp", "run_1")
        assert await a.run_key("p1", "key-1") == ("fp", "run_1")

        assert await b.delete_response("p1", "resp_1") is True
        assert await a.get_response("p1", "resp_1") is None
        assert await a.conversation("p1", "team") is None
        assert await a.delete_response("p1", "resp_1") is False
    finally:
        await asyncio.gather(a.close(), b.close())


async def test_a_late_running_status_never_replaces_the_final_one(pg_dsn: str) -> None:
    store = PgResponseStore(pg_dsn, 100)
    await store.open()
    try:
        await store.put_run("run_1", "p1", {"status": "completed", "terminal_event": {}}, True)
        await store.put_run("run_1", "p1", {"status": "running"}, False)
        assert await store.get_run("run_1") == ("p1", {"status": "completed", "terminal_event": {}})
        assert await store.non_terminal_runs() == []
    finally:
        await store.close()


async def test_least_recently_used_responses_are_evicted_and_old_runs_swept(pg_dsn: str) -> None:
    store = PgResponseStore(pg_dsn, 2)
    await store.open()
    try:
        for i in range(3):
            await store.put_response(f"resp_{i}", "p1", "s", None, None, {"i": i}, None)
            if i == 1:
                assert await store.get_response("p1", "resp_0") is not None  # 0 is now newer than 1
        assert await store.get_response("p1", "resp_1") is None
        assert await store.get_response("p1", "resp_0") is not None
        assert await store.get_response("p1", "resp_2") is not None

        await store.put_run("done", "p1", {"status": "completed"}, True)
        await store.put_run("live", "p1", {"status": "running"}, False)
        await store.put_run_key("p1", "k", "fp", "done")
        await store.sweep(-1.0, -1.0)  # everything is past a negative retention
        assert await store.get_run("done") is None
        assert await store.get_run("live") is not None  # an unsettled run is never swept
        assert await store.run_key("p1", "k") is None
        assert await store.count_runs() == 1
    finally:
        await store.close()


async def test_a_server_restart_costs_reads_nothing_and_writes_at_most_one_failure(pg_dsn: str) -> None:
    dsn, name = own_connections(pg_dsn)  # the server drops this store's connections, no one else's
    store = PgResponseStore(dsn, 100, pool_size=3)
    await store.open()
    try:
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
    finally:
        await store.close()


async def test_input_items_are_kept_and_an_older_table_gains_their_column(pg_dsn: str) -> None:
    import psycopg

    # A database an older version created: api_responses without the input column.
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute(
            "CREATE TABLE api_responses (id TEXT PRIMARY KEY, principal TEXT NOT NULL,"
            " session_id TEXT NOT NULL, through_row_id BIGINT, instructions TEXT, object TEXT NOT NULL,"
            " accessed DOUBLE PRECISION NOT NULL)"
        )
        await conn.execute(
            "INSERT INTO api_responses VALUES ('resp_old', 'p1', 's', NULL, NULL, %s, 0)",
            ('{"id": "resp_old"}',),
        )
    store = PgResponseStore(pg_dsn, 100)
    await store.open()
    try:
        old = await store.get_response("p1", "resp_old")
        assert old is not None and old["input"] is None
        items = [
            {
                "id": "msg_1",
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "hi"}],
            }
        ]
        await store.put_response("resp_new", "p1", "s", 3, None, {"id": "resp_new"}, None, items)
        got = await store.get_response("p1", "resp_new")
        assert got is not None and got["input"] == items
    finally:
        await store.close()
