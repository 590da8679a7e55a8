"""stdio hygiene (docs/reference/acp.md#stdio-hygiene-and-shutdown): bounded stderr lines, the log file, the
primed reader."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from hermes_acp.stdio import BoundedStderrHandler, PrimedReader


def test_stderr_gets_at_most_the_cap_then_one_pointer(tmp_path: Path, capfd: object) -> None:
    """Warnings go to stderr one line each; past the cap one line names the log file."""
    handler = BoundedStderrHandler(tmp_path / "acp.log", cap=3)
    logger = logging.Logger("t")
    logger.addHandler(handler)
    logger.info("not shown")
    for index in range(6):
        logger.warning("line %d\nsecond part", index)
    out, err = capfd.readouterr()  # type: ignore[attr-defined]
    lines = err.splitlines()
    assert lines[:3] == [f"hermes acp: warning: line {i} second part" for i in range(3)]
    assert lines[3] == f"hermes acp: further messages only in {tmp_path / 'acp.log'}"
    assert len(lines) == 4 and out == ""


async def test_primed_reader_returns_waiting_bytes_first() -> None:
    """What stdin holds at start-up is read synchronously, then reading goes on normally."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, b"first\n")
        primed = PrimedReader.prime(read_fd, 0.5)
        assert primed == b"first\n"
        reader = PrimedReader(read_fd, primed)
        assert await reader.read(100) == b"first\n"
        os.write(write_fd, b"second\n")
        assert await asyncio.wait_for(reader.read(100), 5) == b"second\n"
        os.close(write_fd)
        write_fd = -1
        assert await asyncio.wait_for(reader.read(100), 5) == b""
        reader.close()
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


class _FakePeer:
    def __init__(self) -> None:
        self.sent: list[dict[str, object]] = []

    def send(self, frame: dict[str, object]) -> bool:
        self.sent.append(frame)
        return True


class _FakeConn:
    def fast_path(self, message: dict[str, object]) -> dict[str, object] | None:
        from hermes_acp.static import initialize_result

        params = message["params"]
        assert isinstance(params, dict)
        result, _ = initialize_result(params, "0")
        return {"result": result}


def test_waiting_initialize_is_answered_and_the_rest_left_for_the_peer() -> None:
    """A well-formed initialize at the head is answered; anything else is left untouched."""
    from typing import Any

    from hermes_acp.stdio import answer_waiting_initialize

    peer: Any = _FakePeer()
    conn: Any = _FakeConn()
    good = b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}\n'
    assert answer_waiting_initialize(conn, peer, good + b"rest") == b"rest"
    assert peer.sent[0]["id"] == 7 and "result" in peer.sent[0]
    bad_version = b'{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":"1"}}\n'
    assert answer_waiting_initialize(conn, peer, bad_version) == b""
    assert peer.sent[1]["error"]["code"] == -32602  # type: ignore[index]
    for untouched in (
        good[:-1],  # no newline yet
        b'{"id":1,"method":"initialize","params":{"protocolVersion":1}}\n',  # no jsonrpc member
        b'{"jsonrpc":"2.0","method":"initialize","params":{}}\n',  # a notification
        b'{"jsonrpc":"2.0","id":true,"method":"initialize"}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"session/list"}\n',
        b"{not json\n",
    ):
        assert answer_waiting_initialize(conn, peer, untouched) == untouched
    assert len(peer.sent) == 2
