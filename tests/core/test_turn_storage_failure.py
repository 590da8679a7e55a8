"""A storage outage in the middle of a turn fails that turn as a storage failure, not as a crash of
the agent loop (docs/reference/core.md#turn-outcomes)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hermes_core import NewRow, StorageSpec, StorageUnavailable, TurnCompleted, hookimpl
from hermes_core.memory_storage import MemoryStorage
from hermes_core.testing import make_kernel
from tests.core.conftest import collect

OUTAGE = "PostgreSQL at db:5432/hermes is unavailable: server closed the connection"


class AssistantRowsFail(MemoryStorage):
    """Stores user rows; the database "goes away" before the assistant's answer is written."""

    async def append_rows(self, session_id: str, rows: Sequence[NewRow]) -> list[int]:
        if any(row.role == "assistant" for row in rows):
            raise StorageUnavailable(
                "PostgreSQL at db:5432/hermes is unavailable: server closed the connection"
            )
        return await super().append_rows(session_id, rows)


class Backend:
    @hookimpl
    def hermes_storage_backends(self) -> StorageSpec:
        return StorageSpec(name="outage", factory=lambda path, **_: AssistantRowsFail())


async def test_a_storage_outage_mid_turn_is_a_storage_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kernel = make_kernel(
        Backend(),
        entry_points=["mock", "tools"],
        settings={"model": "mock:echo", "data_dir": str(tmp_path), "storage": {"backend": "outage"}},
    )
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        with caplog.at_level(logging.WARNING, logger="hermes.turn"):
            events: list[Any] = await collect(await session.submit("hello there", owner="me"))
        done = events[-1]
        assert isinstance(done, TurnCompleted)
        outcome = done.outcome
        assert (outcome.status, outcome.layer, outcome.partial) == ("error", "storage", True)
        assert outcome.message == OUTAGE
        assert not any(r.exc_info for r in caplog.records)  # reported, not logged as a crash
        assert not session.busy  # the session takes the next turn
