"""Check 20 at the real journal size: a run of more than 1,000 events replayed from cursor 0
(docs/reference/api-server.md#run-events)."""

from __future__ import annotations

from typing import Any

from tests.api.api_helpers import Server, call, parse_sse
from tests.timing import eventually

JOURNAL = 1000  # the default run_journal_events; the shared server keeps it
TOKENS = 2000


async def _settled(server: Server, run_id: str, timeout: float = 40) -> dict[str, Any]:

    async def settled() -> dict[str, Any] | None:
        status = dict((await call(server, "GET", f"/v1/runs/{run_id}")).json)
        return status if status["status"] not in ("queued", "running") else None

    found: dict[str, Any] = await eventually(settled, timeout=timeout, interval=0.1, what=f"run {run_id}")
    return found


async def test_overflow_at_the_real_journal_size(server: Server) -> None:
    # A 1 ms delay before each of 2,000 deltas gives about one journal event per delta (~2 s).
    expected = " ".join(f"t{i}" for i in range(TOKENS))
    accepted = await call(server, "POST", "/v1/runs", {"input": f"[[tokens {TOKENS}]] [[delay 1]] go"})
    assert accepted.status == 202, accepted.text
    run_id = accepted.json["run_id"]
    status = await _settled(server, run_id)
    assert status["status"] == "completed", status
    last = status["last_seq"]
    assert last > JOURNAL + 1, f"the run produced only {last} events; the check needs more than {JOURNAL}"

    reply = await call(server, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "0"})
    assert reply.status == 200
    assert reply.text.rstrip().endswith(": stream closed")
    frames = [f for f in parse_sse(reply.text) if "data" in f]

    gap = frames[0]
    assert "id" not in gap
    assert set(gap["data"]) == {"event", "run_id", "timestamp", "from_seq", "to_seq"}
    assert gap["data"]["event"] == "stream.gap" and gap["data"]["run_id"] == run_id
    # The newest 1,000 events are retained (the terminal one among them); run.started is gone.
    assert gap["data"]["from_seq"] == 1 and gap["data"]["to_seq"] == last - JOURNAL

    retained = frames[1:]
    seqs = [f["data"]["seq"] for f in retained]
    assert seqs == list(range(last - JOURNAL + 1, last + 1))
    assert [f["id"] for f in retained] == [str(s) for s in seqs]
    assert all(f["data"]["event"] == "message.delta" for f in retained[:-1])

    terminal = retained[-1]["data"]
    assert terminal["event"] == "run.completed" and terminal["seq"] == last
    # The terminal event carries the whole answer, though its first deltas left the journal.
    tail = "".join(f["data"]["delta"] for f in retained[:-1])
    assert terminal["output"] == expected == status["output"]
    assert len(tail) < len(expected) and expected.endswith(tail)

    # The legacy ?after= cursor at 0 behaves the same.
    again = await call(server, "GET", f"/v1/runs/{run_id}/events?after=0")
    assert next(f["data"]["event"] for f in parse_sse(again.text) if "data" in f) == "stream.gap"
