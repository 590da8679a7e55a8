"""The new storage and bus contracts are typed: mypy accepts a backend or a bus written to them and
rejects one that gets them wrong (a payload that is not text, a reap that writes, a records call
with the wrong answer), like tests/test_typed_contract.py does for the plugin records."""

from __future__ import annotations

from pathlib import Path

from tests.test_typed_contract import HEADER as PREFIX
from tests.test_typed_contract import mypy

HEADER = """
from __future__ import annotations
from collections.abc import Mapping, Sequence
from typing import Any
from hermes_core import (
    BusEvent, BusRun, ChunkInfo, ChunkWrite, Claim, ControlHandler, EventChunk, EventLogStore,
    OwnerGone, RecordStore, RunBus, RunBusFactory, StoredRecord,
)

class Bus:
    name = "mine"
    instance_id = "me"
    shared = False
    async def start(self, on_control: ControlHandler) -> None: ...
    async def close(self) -> None: ...
    async def diagnostics(self) -> Mapping[str, Any]: return {"ok": True}
    def claim(self, run_id: str, principal: str, session_id: str, status: str) -> None: ...
    def update(self, run_id: str, status: str, *, terminal: bool = False) -> None: ...
    async def flush(self) -> None: ...
    async def lookup(self, run_id: str) -> BusRun | None: return None
    async def bounds(self, run_id: str) -> tuple[int, int] | None: return None
    async def read(self, run_id: str, after: int, block_s: float) -> list[BusEvent]: return []
    async def send(
        self, owner: str, command: str, run_id: str, args: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        return {}
    async def settle(self, gone: OwnerGone, payload: str, seq: int | None = None) -> bool: return True
"""

RIGHT = """
    def publish(self, run_id: str, seq: int, payload: str, *, terminal: bool = False) -> None: ...
    async def gone(self, run_id: str) -> OwnerGone | None: return OwnerGone(run_id, "them", 3)

def make_bus(
    *, url: str | None, instance_id: str, heartbeat_s: float, journal_events: int, retention_s: float
) -> RunBus:
    return Bus()

FACTORY: RunBusFactory = make_bus
BUS: RunBus = Bus()

async def use(store: RecordStore, log: EventLogStore) -> None:
    claim: Claim = await store.claim_record("ns", "k", "{}", owner="me")
    mine: StoredRecord = claim.record
    done: list[bool] = await log.write_event_chunks([ChunkWrite("s", EventChunk(1, 1, b"x"), 0)])
    index: list[ChunkInfo] = await log.event_log_index("s")
    print(mine, done, index)
"""

WRONG = """
    def publish(self, run_id: str, seq: int, payload: dict[str, Any], *, terminal: bool = False) -> None: ...
    async def gone(self, run_id: str) -> bool: return True

BUS: RunBus = Bus()  # line A

def make_bus(*, url: str | None, instance_id: str) -> RunBus:
    return Bus()

FACTORY: RunBusFactory = make_bus  # line C

async def use(store: RecordStore) -> None:
    won: bool = await store.claim_record("ns", "k", "{}", owner="me")  # line D
"""


def test_mypy_accepts_backends_and_buses_written_to_the_contracts(tmp_path: Path) -> None:
    out = mypy(tmp_path, HEADER + RIGHT)
    assert "Success" in out, out


def test_mypy_rejects_each_mistake(tmp_path: Path) -> None:
    out = mypy(tmp_path, HEADER + WRONG)
    lines = (PREFIX + HEADER + WRONG).splitlines()  # mypy() writes PREFIX first
    for tag in "ACD":
        line = next(i for i, text in enumerate(lines, 1) if f"# line {tag}" in text)
        assert f"contract_plugin.py:{line}: error" in out, f"mypy missed mistake {tag}:\n{out}"
