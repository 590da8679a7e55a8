"""What the API server's records do, whichever storage backend keeps them; run on memory and
SQLite by ``test_api_kernel_records.py`` and on PostgreSQL by ``tests/postgres``."""

from __future__ import annotations

from pathlib import Path

from tests.api.records_world import api_records
from tests.timing import eventually


async def responses_names_runs_and_keys(backend: str, where: str | Path) -> None:
    """Two handles (two instances) on one backend see each other's records."""
    async with api_records(backend, where, count=2) as (a, b):
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
        assert await b.runs_of("p2", 10) == []
        assert [r[0] for r in await b.non_terminal_runs()] == ["run_1"]
        await b.put_run("run_1", "p1", {"run_id": "run_1", "status": "completed"}, True)
        assert await a.non_terminal_runs() == []
        assert await a.count_runs() == 1

        await b.put_run_key("p1", "key-1", "fp", "run_1")
        assert await a.run_key("p1", "key-1") == ("fp", "run_1")
        assert await a.run_key("p2", "key-1") is None

        assert await b.delete_response("p2", "resp_1") is False  # not theirs
        assert await b.delete_response("p1", "resp_1") is True
        assert await a.get_response("p1", "resp_1") is None
        assert await a.conversation("p1", "team") is None
        assert await a.delete_response("p1", "resp_1") is False


async def a_name_follows_its_newest_response(backend: str, where: str | Path) -> None:
    """A conversation name points at its newest response; deleting an older one keeps it; a
    rewrite without a name (a cancel) keeps the name the response had; long names work."""
    name = "n" * 2000
    async with api_records(backend, where) as (store,):
        await store.put_response("resp_a", "p1", "s", 1, None, {"id": "resp_a"}, name)
        await store.put_response("resp_b", "p1", "s", 2, None, {"id": "resp_b"}, name)
        assert await store.conversation("p1", name) == "resp_b"
        assert await store.delete_response("p1", "resp_a") is True
        assert await store.conversation("p1", name) == "resp_b"
        await store.put_response("resp_b", "p1", "s", 2, None, {"id": "resp_b", "status": "cancelled"}, None)
        assert await store.delete_response("p1", "resp_b") is True
        assert await store.conversation("p1", name) is None


async def a_late_running_status_never_replaces_the_final_one(backend: str, where: str | Path) -> None:
    async with api_records(backend, where) as (store,):
        await store.put_run("run_1", "p1", {"status": "completed", "terminal_event": {}}, True)
        await store.put_run("run_1", "p1", {"status": "running"}, False)
        assert await store.get_run("run_1") == ("p1", {"status": "completed", "terminal_event": {}})
        assert await store.non_terminal_runs() == []


async def lru_eviction_and_retention(backend: str, where: str | Path) -> None:
    """Past ``max_responses`` the least recently used response goes (reading one refreshes it);
    an ended run and a run key expire with the retention, a running run never does."""
    async with api_records(backend, where, max_responses=2, retention_s=0) as (store,):
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

        async def swept() -> bool:
            await store.sweep(0, 0)
            return await store.count_runs() == 1 and await store.run_key("p1", "k") is None

        await eventually(swept, what="the ended run and its key expiring")
        assert await store.get_run("done") is None
        assert await store.get_run("live") is not None  # an unsettled run is never swept


async def input_items_are_kept(backend: str, where: str | Path) -> None:
    items = [
        {"id": "msg_1", "type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    ]
    async with api_records(backend, where) as (store,):
        await store.put_response("resp_new", "p1", "s", 3, None, {"id": "resp_new"}, None, items)
        got = await store.get_response("p1", "resp_new")
        assert got is not None and got["input"] == items


async def records_outlive_the_process(backend: str, where: str | Path) -> None:
    """What one kernel stored, the next one on the same backend reads (a restart)."""
    async with api_records(backend, where) as (store,):
        await store.put_response("resp_1", "p1", "s", 1, None, {"id": "resp_1"}, "team")
        await store.put_run("run_1", "p1", {"run_id": "run_1", "status": "running"}, False)
        await store.open_console_session("d" * 64, "p1", "csrf", 4e9, 10)
    async with api_records(backend, where) as (again,):
        assert await again.conversation("p1", "team") == "resp_1"
        assert [r[0] for r in await again.non_terminal_runs()] == ["run_1"]
        assert await again.console_session("d" * 64) == ("p1", "csrf", 4e9)


CHECKS = (
    responses_names_runs_and_keys,
    a_name_follows_its_newest_response,
    a_late_running_status_never_replaces_the_final_one,
    lru_eviction_and_retention,
    input_items_are_kept,
)
#: Checks that need a backend that outlives its kernel (not memory).
DURABLE_CHECKS = (records_outlive_the_process,)
