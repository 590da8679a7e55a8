"""The new storage and bus contracts are typed: mypy accepts a backend or a bus written to them and
rejects one that gets them wrong (a payload the bus would have to parse, a reap that answers
nothing, a factory without ``owner_grace_s``, an owner side that is not told ``OwnerGone``, a
records call with the wrong answer), like tests/test_typed_contract.py does for the plugin records."""

from __future__ import annotations

from pathlib import Path

from tests.test_typed_contract import HEADER as PREFIX
from tests.test_typed_contract import mypy

HEADER = """
from __future__ import annotations
from typing import Any
from hermes_core import (
    BusEvent, BusRun, ChunkInfo, ChunkWrite, Claim, ControlHandler, EventChunk, EventLogStore,
    JsonObject, OwnerGone, RecordStore, RunBus, RunBusFactory, RunEnd, RunOwner, RunStatus,
    StoredRecord,
)

class Bus:
    name = "mine"
    instance_id = "me"
    shared = False
    async def start(self, on_control: ControlHandler, owner: RunOwner | None) -> None: ...
    async def close(self) -> None: ...
    async def diagnostics(self) -> JsonObject: return {"ok": True}
    def claim(self, run_id: str, principal: str, session_id: str, status: RunStatus) -> None: ...
    def update(self, run_id: str, status: RunStatus, terminal: bool) -> None: ...
    async def settle(self, run_id: str, end: RunEnd) -> RunStatus | None:
        return None
    async def flush(self) -> None: ...
    async def lookup(self, run_id: str) -> BusRun | None: return None
    async def bounds(self, run_id: str) -> tuple[int, int] | None: return None
    async def read(self, run_id: str, after: int, block_s: float) -> list[BusEvent]:
        return [BusEvent(1, "{}", False)]
    async def send(
        self,
        owner: str,
        command: str,
        run_id: str,
        args: JsonObject,
        timeout_s: float,
        *,
        traceparent: str | None = None,
    ) -> JsonObject:
        return {}
"""

RIGHT = """
    def publish(self, run_id: str, seq: int, payload: str, terminal: bool) -> None: ...
    async def reap(
        self, run_id: str, principal: str | None = None, status: RunStatus | None = None
    ) -> bool:
        return False

def make_bus(
    *,
    url: str | None,
    instance_id: str,
    heartbeat_s: float,
    owner_grace_s: float,
    journal_events: int,
    retention_s: float,
) -> RunBus:
    return Bus()

class Side:
    def shown(self, run_id: str, upto: int) -> None: ...
    def hold(self, run_id: str, upto: int) -> None: ...
    def release(self, run_id: str) -> None: ...
    def lost(self, run_id: str, status: RunStatus) -> None: ...
    async def owner_gone(self, gone: OwnerGone, status: RunStatus) -> RunEnd:
        seq = gone.last_seq + 1
        return RunEnd(seq, '{"event":"run.failed"}', RunStatus("{}", last_seq=seq, status="failed"))
    def reaped(self, run_id: str, principal: str, status: RunStatus) -> None: ...
    async def ended_elsewhere(self, run_ids: list[str]) -> dict[str, RunStatus]: return {}

FACTORY: RunBusFactory = make_bus
BUS: RunBus = Bus()
SIDE: RunOwner = Side()

async def use(store: RecordStore, log: EventLogStore) -> None:
    claim: Claim = await store.claim_record("ns", "k", "{}", owner="me")
    mine: StoredRecord = claim.record
    done: list[bool] = await log.write_event_chunks([ChunkWrite("s", EventChunk(1, 1, b"x"), 0)])
    index: list[ChunkInfo] = await log.event_log_index("s")
    print(mine, done, index)
"""

WRONG = """
    def publish(self, run_id: str, seq: int, payload: JsonObject, terminal: bool) -> None: ...
    async def reap(self, run_id: str) -> None: ...

BUS: RunBus = Bus()  # line A

def make_bus(*, url: str | None, instance_id: str, heartbeat_s: float) -> RunBus:
    return Bus()

FACTORY: RunBusFactory = make_bus  # line C

async def use(store: RecordStore) -> None:
    won: bool = await store.claim_record("ns", "k", "{}", owner="me")  # line D

class Side:
    async def owner_gone(self, run_id: str, last_seq: int) -> None: ...

SIDE: RunOwner = Side()  # line E
"""


def test_mypy_accepts_backends_and_buses_written_to_the_contracts(tmp_path: Path) -> None:
    out = mypy(tmp_path, HEADER + RIGHT)
    assert "Success" in out, out


def test_mypy_rejects_each_mistake(tmp_path: Path) -> None:
    out = mypy(tmp_path, HEADER + WRONG)
    lines = (PREFIX + HEADER + WRONG).splitlines()  # mypy() writes PREFIX first
    for tag in "ACDE":
        line = next(i for i, text in enumerate(lines, 1) if f"# line {tag}" in text)
        assert f"contract_plugin.py:{line}: error" in out, f"mypy missed mistake {tag}:\n{out}"
