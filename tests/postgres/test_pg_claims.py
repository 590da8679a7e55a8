"""A claim on PostgreSQL (docs/reference/core.md#records): a key nobody holds is taken by one
INSERT in autocommit (a stored key's new session, a first lease: one round trip on the way to
the first token); a key already there is decided under the row lock, as before."""

from __future__ import annotations

import time
from typing import Any

from hermes_postgres.plugin import make_storage
from hermes_postgres.store import PostgresStorage


async def test_a_free_key_is_claimed_without_a_transaction(pg_dsn: str) -> None:
    store: PostgresStorage = make_storage(dsn=pg_dsn, pool_size=2, pool_timeout_s=10.0)
    await store.open()
    borrowed: list[bool] = []
    real = store._cursor

    def counting(*, transaction: bool = False) -> Any:
        borrowed.append(transaction)
        return real(transaction=transaction)

    store._cursor = counting  # type: ignore[method-assign]
    try:
        before = time.time()
        mine = await store.claim_record("t.claims", "free", '"v"', owner="a", scope="s", ttl_s=30)
        assert borrowed == [False]  # one statement, no BEGIN / SELECT ... FOR UPDATE / COMMIT
        assert mine.won and mine.record.owner == "a" and mine.record.epoch == 1 and mine.record.version == 1
        assert abs(mine.record.created_at - before) < 60  # the database's clock
        assert mine.record.expires_at is not None
        assert abs(mine.record.expires_at - mine.record.created_at - 30) < 0.01
        stored = await store.get_record("t.claims", "free")
        assert stored is not None and (stored.owner, stored.scope, stored.data) == ("a", "s", '"v"')
        assert stored.created_at == mine.record.created_at and stored.expires_at == mine.record.expires_at
        # Held by another: the insert finds the row, and the locked path answers with its holder.
        borrowed.clear()
        theirs = await store.claim_record("t.claims", "free", '"w"', owner="b")
        assert not theirs.won and theirs.record.owner == "a"
        assert borrowed == [False, True]
        # Without a lifetime the claim does not expire.
        lasting = await store.claim_record("t.claims", "lasting", '"v"', owner="a")
        assert lasting.won and lasting.record.expires_at is None
        assert (await store.get_record("t.claims", "lasting")).expires_at is None  # type: ignore[union-attr]
    finally:
        await store.close()
