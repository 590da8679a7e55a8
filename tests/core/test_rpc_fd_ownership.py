"""The peer never closes descriptors it was given, on either event loop the CLI can run.

Closing a caller's descriptor is not harmless: the caller closes it again later, and if another
thread opened a file in between (the SQLite thread opening the database, say), that second close
hits the file instead. ``hermes acp --check`` failed with ``disk I/O error`` exactly that way
under uvloop, whose pipe transports close the descriptor they are given.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from hermes_core import rpc

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {"asyncio": asyncio.new_event_loop}
try:
    import uvloop

    LOOPS["uvloop"] = uvloop.new_event_loop
except ImportError:  # pragma: no cover - uvloop is a dependency where it builds
    pass


def is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


async def never(_message: dict[str, object]) -> None:
    return None


def answer(message: dict[str, object]) -> dict[str, object] | None:
    return {"jsonrpc": "2.0", "id": message.get("id"), "result": {"echo": message.get("method")}}


Runner = Callable[[Callable[[], Coroutine[Any, Any, Any]]], Any]


@pytest.fixture(params=sorted(LOOPS))
def run(request: pytest.FixtureRequest) -> Runner:
    """Run a scenario to the end on a fresh loop of each kind the CLI can use."""
    factory = LOOPS[request.param]

    def runner(scenario: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        loop = factory()
        try:
            return loop.run_until_complete(scenario())
        finally:
            loop.close()

    return runner


def test_pipe_ends_stay_open_and_blocking_after_the_peer_closes(run: Runner) -> None:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()

    async def scenario() -> bytes:
        peer = rpc.RpcPeer(
            reader=in_r, writer=out_w, dispatch=never, options=rpc.ACP_OPTIONS, fast_path=answer
        )
        running = asyncio.ensure_future(peer.run())
        os.write(in_w, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        reply = await asyncio.get_running_loop().run_in_executor(None, os.read, out_r, 1 << 16)
        os.close(in_w)  # end of input, as when the host goes away
        await asyncio.wait_for(running, 10)
        await peer.aclose()
        return reply

    try:
        reply = run(scenario)
        assert json.loads(reply)["result"] == {"echo": "ping"}
        assert is_open(in_r), "the peer closed the descriptor it reads from"
        assert is_open(out_w), "the peer closed the descriptor it writes to"
        assert os.get_blocking(in_r), "the reader's blocking mode was not restored"
    finally:
        for fd in (in_r, out_r, out_w):
            if is_open(fd):
                os.close(fd)


def test_closing_the_peer_while_a_read_waits_leaves_the_descriptor_open(run: Runner) -> None:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()

    async def scenario() -> str | None:
        peer = rpc.RpcPeer(reader=in_r, writer=out_w, dispatch=never, options=rpc.ACP_OPTIONS)
        running = asyncio.ensure_future(peer.run())
        await asyncio.sleep(0)  # let the pump start waiting for input that never comes
        await peer.aclose()
        await asyncio.wait_for(asyncio.gather(running, return_exceptions=True), 10)
        return peer.close_reason

    try:
        reason = run(scenario)
        assert reason == "closed"
        assert is_open(in_r) and is_open(in_w)
        # The descriptor still works for its owner after the peer let go of it.
        os.write(in_w, b"after\n")
        assert os.read(in_r, 16) == b"after\n"
    finally:
        for fd in (in_r, in_w, out_r, out_w):
            if is_open(fd):
                os.close(fd)


def test_a_regular_file_as_input_is_read_to_the_end_and_left_open(run: Runner, tmp_path: Path) -> None:
    requests = tmp_path / "requests.ndjson"
    requests.write_bytes(b'{"jsonrpc":"2.0","id":1,"method":"a"}\n{"jsonrpc":"2.0","id":2,"method":"b"}\n')
    in_fd = os.open(requests, os.O_RDONLY)
    out_r, out_w = os.pipe()

    async def scenario() -> None:
        peer = rpc.RpcPeer(
            reader=in_fd, writer=out_w, dispatch=never, options=rpc.ACP_OPTIONS, fast_path=answer
        )
        await asyncio.wait_for(peer.run(), 10)
        await peer.aclose()

    try:
        run(scenario)
        lines = os.read(out_r, 1 << 16).splitlines()
        assert [json.loads(line)["result"]["echo"] for line in lines] == ["a", "b"]
        assert is_open(in_fd)
    finally:
        for fd in (in_fd, out_r, out_w):
            if is_open(fd):
                os.close(fd)
