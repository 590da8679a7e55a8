"""Unit tests for the five ``jsonrpcserver`` 5.0.9 traps of docs/reference/acp.md#inbound-dispatch, in
process.

Each test first shows the trap on bare ``jsonrpcserver`` (so the test fails if the library
changes), then shows that ``hermes acp``'s dispatch avoids it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
from jsonrpcserver import Success, async_dispatch_to_serializable

from hermes_acp.conn import AcpConnection
from hermes_core import TransportContext, rpc
from hermes_core.testing import make_kernel


class Pipe:
    """An in-process ``RpcPeer`` with the ACP hooks over two OS pipes."""

    def __init__(self, conn: AcpConnection) -> None:
        self.conn = conn
        self.to_r, self.to_w = os.pipe()
        self.from_r, self.from_w = os.pipe()
        self.peer = rpc.RpcPeer(
            reader=self.to_r,
            writer=self.from_w,
            dispatch=conn.dispatch,
            options=rpc.ACP_OPTIONS,
            fast_path=conn.fast_path,
            prepare=conn.prepare,
        )
        conn.peer = self.peer
        self.task = asyncio.create_task(self.peer.run())
        self.buffer = b""

    async def call(self, message: dict[str, Any] | bytes) -> dict[str, Any]:
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        os.write(self.to_w, data)
        loop = asyncio.get_running_loop()
        while b"\n" not in self.buffer:
            self.buffer += await asyncio.wait_for(
                loop.run_in_executor(None, os.read, self.from_r, 1 << 16), 5
            )
        line, _, self.buffer = self.buffer.partition(b"\n")
        frame: dict[str, Any] = json.loads(line)
        return frame

    async def close(self) -> None:
        os.close(self.to_w)
        await self.peer.aclose()
        self.task.cancel()
        for fd in (self.to_r, self.from_r, self.from_w):
            os.close(fd)


@pytest.fixture
async def pipe() -> AsyncIterator[Pipe]:
    from hermes_mock import plugin as mock_plugin

    kernel = make_kernel(mock_plugin, settings={"model": "mock:script"})
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    ctx = TransportContext(kernel=kernel, options={}, ready=ready)
    async with kernel.running():
        ready.set_result(None)
        p = Pipe(AcpConnection(ctx))
        try:
            yield p
        finally:
            await p.close()


async def _bare(message: dict[str, Any], methods: dict[str, Any]) -> Any:
    return await async_dispatch_to_serializable(json.dumps(message), methods=methods)


async def test_trap1_null_params(pipe: Pipe) -> None:
    """Trap 1: bare jsonrpcserver loses the id on null params; the peer turns them into {}."""

    async def listing(**params: Any) -> Any:
        return Success({})

    bare = await _bare(
        {"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": None}, {"session/list": listing}
    )
    assert bare["error"]["code"] == -32600 and bare["id"] is None
    frame = await pipe.call({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": None})
    assert frame == {"jsonrpc": "2.0", "id": 1, "result": {"sessions": []}}


async def test_trap2_unknown_fields_are_ignored(pipe: Pipe) -> None:
    """Trap 2: unknown fields fail binding on bare handlers; ours take **params and ignore them."""

    async def strict(ctx: Any, cursor: str | None = None) -> Any:
        return Success({})

    bare: Any = await async_dispatch_to_serializable(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"extra": 1}}),
        methods={"m": strict},
        context=None,
    )
    assert bare["error"]["code"] == -32602
    frame = await pipe.call(
        {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {"extra": 1, "_meta": {}}}
    )
    assert frame["result"] == {"sessions": []}
    frame = await pipe.call({"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {"_acp_conn": 1}})
    assert frame["result"] == {"sessions": []}


async def test_trap3_dispatcher_failure_is_not_auth_required(pipe: Pipe, monkeypatch: Any) -> None:
    """Trap 3: jsonrpcserver's own failure says -32000; the peer rewrites it to -32603."""
    import hermes_acp.methods as methods

    class Exploding(dict[str, Any]):
        def __getitem__(self, key: str) -> Any:
            raise RuntimeError("table exploded with secret sk-123")

    bare: Any = await async_dispatch_to_serializable(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {}}), methods=Exploding()
    )
    assert bare["error"]["code"] == -32000 and bare["error"]["message"] == "Server error"
    monkeypatch.setattr(methods, "METHODS", Exploding(methods.METHODS))
    logging.getLogger("jsonrpcserver").disabled = True
    try:
        frame = await pipe.call({"jsonrpc": "2.0", "id": 4, "method": "session/list", "params": {}})
    finally:
        logging.getLogger("jsonrpcserver").disabled = False
    assert frame["error"]["code"] == -32603
    assert "errorId" in frame["error"]["data"]
    assert "sk-123" not in json.dumps(frame)


async def test_trap4_exception_text_never_reaches_the_wire(pipe: Pipe, monkeypatch: Any) -> None:
    """Trap 4: bare jsonrpcserver puts exception text in data; ours answer -32603 + errorId."""

    async def boom(**params: Any) -> Any:
        raise RuntimeError("secret sk-456")

    logging.getLogger("jsonrpcserver").disabled = True
    try:
        bare = await _bare({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {}}, {"m": boom})
        assert "sk-456" in json.dumps(bare)
        import hermes_acp.sessions as sessions

        async def failing(conn: Any, params: Any) -> Any:
            raise RuntimeError("secret sk-456")

        import hermes_acp.methods as methods

        monkeypatch.setitem(methods.METHODS, "session/list", methods._bind("session/list", failing))
        frame = await pipe.call({"jsonrpc": "2.0", "id": 5, "method": "session/list", "params": {}})
    finally:
        logging.getLogger("jsonrpcserver").disabled = False
    assert frame["error"]["code"] == -32603 and frame["error"]["message"] == "Internal error"
    assert set(frame["error"]["data"]) == {"errorId"}
    assert "sk-456" not in json.dumps(frame)
    assert sessions.list_sessions is not failing


async def test_trap5_prompt_registered_before_the_next_frame(pipe: Pipe) -> None:
    """Trap 5: a cancel right behind a prompt (same write) always sees that prompt."""
    frame = await pipe.call(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    assert frame["result"]["protocolVersion"] == 1
    new = await pipe.call(
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": os.getcwd(), "mcpServers": []}}
    )
    sid = new["result"]["sessionId"]
    prompt = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[delay 100]] [[tokens 20]]"}]},
    }
    cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}
    data = (json.dumps(prompt) + "\n" + json.dumps(cancel) + "\n").encode()
    frame = await pipe.call(data)
    while "method" in frame:
        frame = await pipe.call(b"")
    assert frame == {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "cancelled"}}
