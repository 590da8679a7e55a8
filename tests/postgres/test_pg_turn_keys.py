"""``Idempotency-Key`` results of non-streamed turns, kept in the API server's records: two
instances (two ``TurnKeys`` on two stores over one PostgreSQL database) compute a key once; a twin
waits for the first computation, a different body is a conflict, a failure or a dead claimer
frees the key. The records are the kernel's (``KernelApiRecords``); the same behaviour holds on one
instance's SQLite file."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import hermes_api_server.idempotency as idem
from hermes_api_server.errors import ApiError
from hermes_api_server.idempotency import TurnKeys
from hermes_api_server.records import ApiRecords
from tests.api.records_world import api_records
from tests.timing import eventually

KEY = ("principal-1", "chat", "key-1")


@pytest.fixture
async def pair(pg_dsn: str) -> AsyncIterator[tuple[ApiRecords, ApiRecords]]:
    async with api_records("postgres", pg_dsn, count=2) as (a, b):
        yield a, b


class Model:
    """A computation that counts its calls and can be held until released."""

    def __init__(self, answer: Any = None) -> None:
        self.calls = 0
        self.release = asyncio.Event()
        self.release.set()
        self.answer = answer if answer is not None else [200, {"id": "chatcmpl-1"}, {"X-A": "1"}]

    async def __call__(self) -> Any:
        self.calls += 1
        await self.release.wait()
        return self.answer


async def test_a_retry_on_another_instance_gets_the_stored_result(
    pair: tuple[ApiRecords, ApiRecords],
) -> None:
    a, b = TurnKeys(pair[0]), TurnKeys(pair[1])
    model = Model()
    assert await a.run(KEY, "fp", model) == (model.answer, False)
    assert await b.run(KEY, "fp", model) == (model.answer, True)
    assert model.calls == 1
    with pytest.raises(ApiError) as caught:
        await b.run(KEY, "other body", model)
    assert (caught.value.status, caught.value.code) == (409, "idempotency_key_conflict")
    # Another principal or route is another key.
    assert (await b.run(("principal-2", "chat", "key-1"), "fp", model))[1] is False
    assert (await b.run(("principal-1", "responses", "key-1"), "fp", model))[1] is False
    assert model.calls == 3


async def test_a_twin_waits_for_the_first_instance_and_shares_its_result(
    pair: tuple[ApiRecords, ApiRecords], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = TurnKeys(pair[0]), TurnKeys(pair[1])
    looks: list[Any] = []
    claim = pair[1].claim_key

    async def counted(*args: Any) -> Any:
        looks.append(await claim(*args))
        return looks[-1]

    monkeypatch.setattr(pair[1], "claim_key", counted)
    model = Model()
    model.release.clear()
    first = asyncio.create_task(a.run(KEY, "fp", model))
    await eventually(lambda: model.calls == 1, what="the first request computing")
    twin = asyncio.create_task(b.run(KEY, "fp", model))
    await eventually(lambda: len(looks) >= 2, what="the twin polling the unfinished record")
    assert looks[0] == ("fp", None) and not twin.done()
    model.release.set()
    assert await first == (model.answer, False)
    assert await twin == (model.answer, True)
    assert model.calls == 1


async def test_a_twin_gives_up_with_in_progress_and_a_failure_frees_the_key(
    pair: tuple[ApiRecords, ApiRecords],
) -> None:
    a, b = TurnKeys(pair[0]), TurnKeys(pair[1], wait_s=0.3)
    model = Model()
    model.release.clear()
    first = asyncio.create_task(a.run(KEY, "fp", model))
    await eventually(lambda: model.calls == 1, what="the first request computing")
    with pytest.raises(ApiError) as caught:
        await b.run(KEY, "fp", model)
    err = caught.value
    assert (err.status, err.code, err.param) == (409, "idempotency_key_in_progress", "Idempotency-Key")
    assert err.headers["Retry-After"] == "1" and err.headers["X-Should-Retry"] == "true"
    first.cancel()  # the first request fails (its client went away): nothing is stored
    with pytest.raises(asyncio.CancelledError):
        await first
    model.release.set()
    assert await b.run(KEY, "fp", model) == (model.answer, False)
    assert model.calls == 2


async def test_a_claim_whose_instance_died_is_taken_over(
    pair: tuple[ApiRecords, ApiRecords], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The dead instance claimed the key and never touched it again.
    assert await pair[0].claim_key(*KEY, "fp", 300.0, 20.0) is None
    monkeypatch.setattr(idem, "CLAIM_STALE_S", 0.2)
    model = Model()
    assert await TurnKeys(pair[1]).run(KEY, "fp", model) == (model.answer, False)
    assert model.calls == 1


async def test_results_expire_with_the_ttl(pair: tuple[ApiRecords, ApiRecords]) -> None:
    model = Model()
    await TurnKeys(pair[0], ttl_s=0.2).run(KEY, "fp", model)

    async def expired() -> bool:
        await pair[1].sweep(86400.0, 0.2)  # the sweep drops results past their TTL
        return await pair[1].claim_key(*KEY, "new body", 300.0, 20.0) is None

    # Past its TTL the stored result is gone: the key is computed again, under a new body too.
    await eventually(expired, what="the stored result expiring")
    await pair[1].drop_key(*KEY)
    assert await TurnKeys(pair[1]).run(KEY, "new body", model) == (model.answer, False)
    assert model.calls == 2


async def test_one_instance_on_sqlite_keeps_results_across_a_restart(tmp_path: Path) -> None:
    model = Model()
    async with api_records("sqlite", tmp_path / "hermes.sqlite3") as (store,):
        assert await TurnKeys(store).run(KEY, "fp", model) == (model.answer, False)
    async with api_records("sqlite", tmp_path / "hermes.sqlite3") as (again,):
        assert await TurnKeys(again).run(KEY, "fp", model) == (model.answer, True)
        with pytest.raises(ApiError) as caught:
            await TurnKeys(again).run(KEY, "other", model)
        assert caught.value.code == "idempotency_key_conflict"
    assert model.calls == 1
