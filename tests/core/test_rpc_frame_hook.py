"""``RpcPeer.arm_frame_hook``: a hook armed on a running peer sees every frame sent after it, in
wire order, and decides what is written (hermes_core/rpc/_io.py), over real pipes and sockets."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from hermes_core import rpc
from tests.timing import scaled


async def _echo(message: dict[str, Any]) -> dict[str, Any]:
    return {"result": message["params"]}


class Script:
    """A hook that withholds, repeats or holds back frames by their ``n``, noting what it saw."""

    def __init__(self, *, drop: int = -1, twice: int = -1, hold: int = -1, fail: int = -1) -> None:
        self.drop, self.twice, self.hold, self.fail = drop, twice, hold, fail
        self.seen: list[int] = []
        self.threads: set[str] = set()

    def __call__(self, frame: bytes) -> Sequence[bytes]:
        n = json.loads(frame)["params"]["n"]
        self.seen.append(n)
        self.threads.add(threading.current_thread().name)
        if n == self.fail:
            raise RuntimeError("a bug in the hook")
        if n == self.hold:
            time.sleep(0.3)
        if n == self.drop:
            return ()
        if n == self.twice:
            return (frame, frame)
        return (frame,)


async def _read_lines(reader: asyncio.StreamReader, count: int) -> list[bytes]:
    return [await asyncio.wait_for(reader.readline(), scaled(5)) for _ in range(count)]


async def _pipe_peer() -> tuple[rpc.RpcPeer, asyncio.StreamReader, list[Any]]:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    peer = rpc.RpcPeer(reader=in_r, writer=out_w, dispatch=_echo)
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), open(out_r, "rb", buffering=0)
    )
    return peer, reader, [in_r, in_w, out_w, transport]


async def _close(peer: rpc.RpcPeer, held: list[Any]) -> None:
    await peer.aclose()
    in_r, in_w, out_w, transport = held
    transport.close()
    for fd in (in_r, in_w, out_w):
        os.close(fd)


async def test_frames_sent_before_arming_pass_untouched_and_later_ones_go_through_the_hook() -> None:
    peer, reader, held = await _pipe_peer()
    try:
        for n in range(3):
            peer.notify("tick", {"n": n})
        hook = Script(drop=4, twice=5)
        peer.arm_frame_hook(hook)  # frames 0-2 may still be queued: they are not the hook's
        for n in range(3, 8):
            peer.notify("tick", {"n": n})
        assert await peer.flush(scaled(5))  # a withheld frame still counts as written
        lines = await _read_lines(reader, 8)
        assert [json.loads(line)["params"]["n"] for line in lines] == [0, 1, 2, 3, 5, 5, 6, 7]
        assert lines[4] == lines[5]  # a duplicate is byte-identical
        assert hook.seen == [3, 4, 5, 6, 7]
        assert hook.threads == {f"hermes-rpc-writer-{held[2]}"}  # on the writer thread, not the loop
        assert peer.pending_bytes == 0
    finally:
        await _close(peer, held)


async def test_a_hook_that_blocks_holds_back_later_frames_but_not_the_loop() -> None:
    peer, reader, held = await _pipe_peer()
    try:
        peer.arm_frame_hook(Script(hold=1))
        started = time.monotonic()
        for n in range(3):
            peer.notify("tick", {"n": n})
        ticks = 0
        while time.monotonic() - started < 0.2:  # the loop keeps running while the hook sleeps
            await asyncio.sleep(0.01)
            ticks += 1
        assert ticks >= 5
        lines = await _read_lines(reader, 3)
        assert time.monotonic() - started >= 0.3
        assert [json.loads(line)["params"]["n"] for line in lines] == [0, 1, 2]
    finally:
        await _close(peer, held)


async def test_a_failing_hook_lets_the_frame_through(caplog: pytest.LogCaptureFixture) -> None:
    peer, reader, held = await _pipe_peer()
    try:
        peer.arm_frame_hook(Script(fail=1))
        for n in range(3):
            peer.notify("tick", {"n": n})
        lines = await _read_lines(reader, 3)
        assert [json.loads(line)["params"]["n"] for line in lines] == [0, 1, 2]
        assert "a frame hook failed" in caplog.text
    finally:
        await _close(peer, held)


async def test_a_stream_writer_peer_can_be_armed_too() -> None:
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=ours)
    host_reader, host_writer = await asyncio.open_connection(sock=theirs)
    peer = rpc.RpcPeer(reader=reader, writer=writer, dispatch=_echo)
    try:
        peer.notify("tick", {"n": 0})
        hook = Script(drop=1, twice=2)
        peer.arm_frame_hook(hook)
        for n in range(1, 4):
            peer.notify("tick", {"n": n})
        assert await peer.flush(scaled(5))
        lines = await _read_lines(host_reader, 4)
        assert [json.loads(line)["params"]["n"] for line in lines] == [0, 2, 2, 3]
        assert hook.seen == [1, 2, 3]
    finally:
        await peer.aclose()
        writer.close()
        host_writer.close()
