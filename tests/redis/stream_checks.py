"""What every run event stream must look like, whichever instance serves it and whatever failed
(docs/reference/api-server.md#run-events): seqs in order with nothing skipped silently (a
``stream.gap`` names every skipped range, right before the event after it), one terminal event,
at the end."""

from __future__ import annotations

from typing import Any

TERMINAL_EVENTS = frozenset({"run.completed", "run.failed", "run.cancelled", "run.interrupted"})


def check_stream(frames: list[dict[str, Any]], cursor: int = 0) -> dict[int, dict[str, Any]]:
    """Assert the shape of a stream read from ``cursor``; return its events by seq.

    :param frames: ``{"id"?, "data"}`` frames as read.
    """
    events: dict[int, dict[str, Any]] = {}
    terminals = []
    for frame in frames:
        data = frame["data"]
        assert not terminals, f"an event after the terminal one: {data}"
        if data["event"] == "stream.gap":
            assert "id" not in frame, frame
            assert data["from_seq"] == cursor + 1 and data["to_seq"] >= data["from_seq"], (cursor, data)
            cursor = data["to_seq"]
            continue
        seq = int(frame["id"])
        assert seq == data["seq"] == cursor + 1, f"seq {seq} after {cursor} with no stream.gap: {data}"
        cursor = seq
        events[seq] = data
        if data["event"] in TERMINAL_EVENTS:
            terminals.append(data)
    return events
