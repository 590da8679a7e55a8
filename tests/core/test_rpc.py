"""Tests for hermes_core.rpc, the NDJSON JSON-RPC peer, driven over real OS pipes and subprocesses."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_core import rpc

MIB = 1 << 20


def strict_loads(line: bytes) -> Any:
    """Parse a wire line the way a strict host would: UTF-8, real JSON only (no NaN)."""

    def reject(name: str) -> Any:
        raise ValueError(f"{name} on the wire")

    return json.loads(line.decode("utf-8"), parse_constant=reject)


def frame(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Host:
    """The host's end of the two pipes: writes requests, reads frames."""

    def __init__(self, write_fd: int, reader: asyncio.StreamReader, read_transport: asyncio.ReadTransport):
        self.write_fd = write_fd
        self.reader = reader
        self.read_transport = read_transport

    async def send_raw(self, data: bytes) -> None:
        await asyncio.to_thread(_write_all, self.write_fd, data)

    async def send(self, obj: Any) -> None:
        await self.send_raw(frame(obj))

    async def recv_line(self, timeout: float = 5.0) -> bytes:
        line = await asyncio.wait_for(self.reader.readline(), timeout)
        assert line.endswith(b"\n"), f"stream ended: {line!r}"
        return line

    async def recv(self, timeout: float = 5.0) -> dict[str, Any]:
        value = strict_loads(await self.recv_line(timeout))
        assert isinstance(value, dict)
        return value

    async def recv_many(self, n: int) -> list[dict[str, Any]]:
        return [await self.recv() for _ in range(n)]

    async def assert_silent(self, delay: float = 0.15) -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(self.reader.readline(), delay)

    def close_input(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1


PeerFactory = Callable[..., Awaitable[tuple[rpc.RpcPeer, Host]]]


@pytest.fixture
async def make_peer() -> AsyncIterator[PeerFactory]:
    """Build peers over fresh os.pipe() pairs, running, with a Host on the other ends."""
    opened: list[tuple[rpc.RpcPeer, Host, asyncio.Task[Any], int, int]] = []

    async def factory(dispatch: rpc.Dispatch | None = None, **kwargs: Any) -> tuple[rpc.RpcPeer, Host]:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        peer = rpc.RpcPeer(reader=in_r, writer=out_w, dispatch=dispatch or echo, **kwargs)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=80 * MIB)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), open(out_r, "rb", buffering=0)
        )
        host = Host(in_w, reader, transport)
        runner = asyncio.create_task(peer.run())
        opened.append((peer, host, runner, in_r, out_w))
        return peer, host

    yield factory
    for peer, host, runner, in_r, out_w in opened:
        host.close_input()
        await asyncio.wait_for(asyncio.gather(runner, return_exceptions=True), 5)
        await peer.aclose()
        host.read_transport.close()
        os.close(in_r)
        os.close(out_w)


async def echo(message: dict[str, Any]) -> dict[str, Any]:
    return {"result": message["params"]}


# ---------------------------------------------------------------------------- framing


async def test_line_separators_inside_strings_are_data(make_peer: PeerFactory) -> None:
    _, host = await make_peer()
    text = "a\u2028b\u2029c\u0085d"
    await host.send({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"t": text}})
    line = await host.recv_line()
    assert "\u2028".encode() in line  # written raw (ensure_ascii=False), not escaped
    assert line.count(b"\n") == 1
    assert strict_loads(line) == {"jsonrpc": "2.0", "id": 1, "result": {"t": text}}


async def test_crlf_endings_and_blank_lines(make_peer: PeerFactory) -> None:
    _, host = await make_peer()
    await host.send_raw(
        b"\n\r\n   \t \n"
        b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"n":1}}\r\n'
        b"\r\n\n"
        b'  {"jsonrpc":"2.0","id":2,"method":"echo","params":{"n":2}}  \r\n'
    )
    assert await host.recv_many(2) == [
        {"jsonrpc": "2.0", "id": 1, "result": {"n": 1}},
        {"jsonrpc": "2.0", "id": 2, "result": {"n": 2}},
    ]
    await host.assert_silent()


async def test_line_over_cap_is_refused_and_reading_continues(make_peer: PeerFactory) -> None:
    # A small cap and small reads, so the long line spans many chunks and is never buffered.
    options = dataclasses.replace(rpc.TUI_OPTIONS, max_line_bytes=1000, read_chunk_bytes=128)
    _, host = await make_peer(options=options)
    long_line = frame({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"x": "y" * 5000}})
    ok = frame({"jsonrpc": "2.0", "id": 2, "method": "echo", "params": {"x": "z" * 900}})
    await host.send_raw(long_line + ok)
    assert await host.recv() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "request too large"},
    }
    assert (await host.recv())["id"] == 2


async def test_tui_cap_is_8_mib_and_a_5_mb_line_works(make_peer: PeerFactory) -> None:
    assert rpc.TUI_OPTIONS.max_line_bytes == 8 * MIB
    assert rpc.ACP_OPTIONS.max_line_bytes == 64 * MIB
    _, host = await make_peer(options=rpc.TUI_OPTIONS)
    blob = "é" * (5 * 1_000_000 // 2)  # 5 MB of UTF-8
    await host.send({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"blob": blob}})
    reply = await host.recv(timeout=20)
    assert reply["result"]["blob"] == blob
    await host.send_raw(b'{"id":2,"method":"echo","params":{"b":"' + b"x" * (9 * MIB) + b'"}}\n')
    assert (await host.recv(timeout=20))["error"]["message"] == "request too large"
    await host.send({"id": 3, "method": "echo"})
    assert (await host.recv())["id"] == 3


# ---------------------------------------------------------------------------- malformed input


@pytest.mark.parametrize(
    ("raw", "code", "message"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":', -32700, "parse error"),
        (b"not json at all", -32700, "parse error"),
        (b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"t":"\xff\xfe"}}', -32700, "parse error"),
        (b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"n":NaN}}', -32700, "parse error"),
        (b'[{"jsonrpc":"2.0","id":1,"method":"echo"}]', -32600, "invalid request"),
        (b"42", -32600, "invalid request"),
        (b'"text"', -32600, "invalid request"),
        (b'{"jsonrpc":"2.0","id":true,"method":"echo"}', -32600, "invalid request"),
    ],
)
async def test_unreadable_input_gets_an_error_with_null_id(
    make_peer: PeerFactory, raw: bytes, code: int, message: str
) -> None:
    _, host = await make_peer()
    await host.send_raw(raw + b"\n" + frame({"jsonrpc": "2.0", "id": 9, "method": "echo"}))
    assert await host.recv() == {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    assert await host.recv() == {"jsonrpc": "2.0", "id": 9, "result": {}}


@pytest.mark.parametrize(
    "request_obj",
    [
        {"jsonrpc": "2.0", "id": 5},
        {"jsonrpc": "2.0", "id": 5, "method": ""},
        {"jsonrpc": "2.0", "id": 5, "method": 12},
        {"jsonrpc": "1.0", "id": 5, "method": "echo"},
        {"jsonrpc": None, "id": 5, "method": "echo"},
    ],
)
async def test_bad_envelope_gets_invalid_request_echoing_the_id(
    make_peer: PeerFactory, request_obj: dict[str, Any]
) -> None:
    _, host = await make_peer()
    await host.send(request_obj)
    assert await host.recv() == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": -32600, "message": "invalid request"},
    }


async def test_jsonrpc_member_optional_for_tui_required_for_acp(make_peer: PeerFactory) -> None:
    seen: list[dict[str, Any]] = []

    async def record(message: dict[str, Any]) -> dict[str, Any]:
        seen.append(dict(message))
        return {"result": "ok"}

    _, tui = await make_peer(record, options=rpc.TUI_OPTIONS)
    await tui.send({"id": 1, "method": "session.create"})
    assert await tui.recv() == {"jsonrpc": "2.0", "id": 1, "result": "ok"}
    assert seen == [{"jsonrpc": "2.0", "id": 1, "method": "session.create", "params": {}}]

    _, acp = await make_peer(record, options=rpc.ACP_OPTIONS)
    await acp.send({"id": 1, "method": "session/new"})
    assert await acp.recv() == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32600, "message": "Invalid request"},
    }
    assert len(seen) == 1


async def test_null_or_missing_params_become_empty_object(make_peer: PeerFactory) -> None:
    _, host = await make_peer()
    await host.send({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": None})
    await host.send({"jsonrpc": "2.0", "id": 2, "method": "echo"})
    assert [r["result"] for r in await host.recv_many(2)] == [{}, {}]


async def test_params_not_object_is_invalid_params_in_each_style(make_peer: PeerFactory) -> None:
    _, tui = await make_peer(options=rpc.TUI_OPTIONS)
    await tui.send({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": [1, 2]})
    assert (await tui.recv())["error"] == {
        "code": -32602,
        "message": "invalid params",
        "data": {"param": "params", "expected": "object"},
    }
    _, acp = await make_peer(options=rpc.ACP_OPTIONS)
    await acp.send({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": "x"})
    error = (await acp.recv())["error"]
    assert error["code"] == -32602
    assert error["message"].startswith("Invalid params: params")
    assert error["data"] == {"field": "params"}


async def test_ids_echo_with_their_json_type(make_peer: PeerFactory) -> None:
    _, host = await make_peer()
    for request_id in ["7", 7, 0, "", None, 2.5]:
        await host.send({"jsonrpc": "2.0", "id": request_id, "method": "echo"})
        reply = await host.recv()
        assert reply["id"] == request_id and type(reply["id"]) is type(request_id)


# ---------------------------------------------------------------------------- responses


async def test_notifications_never_get_a_response(make_peer: PeerFactory) -> None:
    calls: list[str] = []

    async def dispatch(message: dict[str, Any]) -> dict[str, Any] | None:
        calls.append(message["method"])
        if message["method"] == "boom":
            raise RuntimeError("notification handler failed")
        return {"result": "would be ignored"}

    _, host = await make_peer(dispatch)
    await host.send({"jsonrpc": "2.0", "method": "note"})
    await host.send({"jsonrpc": "2.0", "method": "boom"})
    await host.send({"jsonrpc": "2.0", "method": "note", "params": [1]})
    await host.send({"jsonrpc": "2.0", "id": 1, "method": "last"})
    assert await host.recv() == {"jsonrpc": "2.0", "id": 1, "result": "would be ignored"}
    await host.assert_silent()
    assert calls == ["note", "boom", "last"]


async def test_handler_exception_is_internal_error_with_logged_id(
    make_peer: PeerFactory, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    async def dispatch(message: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("secret-detail")

    caplog.set_level(logging.ERROR, logger="hermes_core.rpc")
    for options, key, message in [
        (rpc.TUI_OPTIONS, "error_id", "internal error"),
        (rpc.ACP_OPTIONS, "errorId", "Internal error"),
    ]:
        _, host = await make_peer(dispatch, options=options)
        await host.send({"jsonrpc": "2.0", "id": 3, "method": "session/new"})
        line = await host.recv_line()
        assert b"secret-detail" not in line
        error = strict_loads(line)["error"]
        assert error["code"] == -32603 and error["message"] == message
        assert list(error["data"]) == [key]
        error_id = error["data"][key]
        assert len(error_id) == 32 and int(error_id, 16) >= 0
        logged = [r for r in caplog.records if error_id in r.getMessage()]
        assert logged and logged[0].exc_info is not None
    assert "Traceback" not in capfd.readouterr().out


async def test_rpc_error_from_dispatch_is_sent_as_is(make_peer: PeerFactory) -> None:
    async def dispatch(message: dict[str, Any]) -> dict[str, Any]:
        raise rpc.RpcError(-32002, "Resource not found", {"sessionId": "abc"})

    _, host = await make_peer(dispatch, options=rpc.ACP_OPTIONS)
    await host.send({"jsonrpc": "2.0", "id": 1, "method": "session/load"})
    assert (await host.recv())["error"] == {
        "code": -32002,
        "message": "Resource not found",
        "data": {"sessionId": "abc"},
    }


async def test_server_error_is_rewritten_but_auth_required_is_kept(make_peer: PeerFactory) -> None:
    async def dispatch(message: dict[str, Any]) -> dict[str, Any]:
        if message["method"] == "crash":  # what jsonrpcserver 5.0.9 answers when a handler escapes
            return {"jsonrpc": "2.0", "error": {"code": -32000, "message": "Server error", "data": "pw=123"}}
        return {"jsonrpc": "2.0", "error": {"code": -32000, "message": "Authentication required"}, "id": 1}

    _, host = await make_peer(dispatch, options=rpc.ACP_OPTIONS)
    await host.send({"jsonrpc": "2.0", "id": 1, "method": "crash"})
    line = await host.recv_line()
    assert b"pw=123" not in line
    error = strict_loads(line)["error"]
    assert error["code"] == -32603 and set(error["data"]) == {"errorId"}
    await host.send({"jsonrpc": "2.0", "id": 2, "method": "session/new"})
    assert await host.recv() == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32000, "message": "Authentication required"},
    }


async def test_no_nan_on_the_wire(make_peer: PeerFactory) -> None:
    async def dispatch(message: dict[str, Any]) -> dict[str, Any] | None:
        if message["method"] == "nan":
            return {"result": {"score": float("nan")}}
        if message["method"] == "object":
            return {"result": {"when": object()}}
        return None  # a request answered with nothing is a handler bug

    peer, host = await make_peer(dispatch)
    assert peer.send({"jsonrpc": "2.0", "method": "event", "params": {"x": float("inf")}}) is False
    assert peer.notify("event", {"x": {1, 2}}) is False
    for i, method in enumerate(["nan", "object", "nothing"]):
        await host.send({"jsonrpc": "2.0", "id": i, "method": method})
        reply = await host.recv()  # strict parse: no NaN / Infinity
        assert reply["id"] == i and reply["error"]["code"] == -32603
    await host.assert_silent()


async def test_out_of_order_responses_are_matched_by_id(make_peer: PeerFactory) -> None:
    fast_done = asyncio.Event()

    async def dispatch(message: dict[str, Any]) -> dict[str, Any]:
        if message["method"] == "slow":
            await fast_done.wait()  # the reader must not wait for this handler
        else:
            fast_done.set()
        return {"result": message["method"]}

    _, host = await make_peer(dispatch)
    await host.send({"jsonrpc": "2.0", "id": 1, "method": "slow"})
    await host.send({"jsonrpc": "2.0", "id": 2, "method": "fast"})
    assert await host.recv_many(2) == [
        {"jsonrpc": "2.0", "id": 2, "result": "fast"},
        {"jsonrpc": "2.0", "id": 1, "result": "slow"},
    ]


async def test_fast_path_and_prepare_run_before_the_next_frame(make_peer: PeerFactory) -> None:
    registered: list[str] = []
    release = asyncio.Event()
    dispatched: list[str] = []

    def fast_path(message: dict[str, Any]) -> dict[str, Any] | None:
        if message["method"] == "session.interrupt":
            return {"result": {"saw": list(registered)}}
        if message["method"] == "refuse":
            raise rpc.RpcError(4009, "session busy")
        return None

    def prepare(message: dict[str, Any]) -> None:
        if message["method"] == "prompt.submit":
            registered.append(message["params"]["session_id"])
            current = rpc.current_request()
            assert current is not None
            current.state["turn"] = "registered"
        if message["method"] == "bad":
            raise rpc.RpcError(-32602, "invalid params", {"param": "text", "expected": "string"})

    async def dispatch(message: dict[str, Any]) -> dict[str, Any]:
        current = rpc.current_request()
        assert current is not None
        dispatched.append(message["method"])
        await release.wait()
        return {"result": current.state.get("turn")}

    _, host = await make_peer(dispatch, fast_path=fast_path, prepare=prepare)
    # Both frames in one write: the interrupt is read right after the submit.
    await host.send_raw(
        frame({"jsonrpc": "2.0", "id": 1, "method": "prompt.submit", "params": {"session_id": "s1"}})
        + frame({"jsonrpc": "2.0", "id": 2, "method": "session.interrupt", "params": {"session_id": "s1"}})
        + frame({"jsonrpc": "2.0", "id": 3, "method": "refuse"})
        + frame({"jsonrpc": "2.0", "id": 4, "method": "bad"})
    )
    assert await host.recv_many(3) == [
        {"jsonrpc": "2.0", "id": 2, "result": {"saw": ["s1"]}},
        {"jsonrpc": "2.0", "id": 3, "error": {"code": 4009, "message": "session busy"}},
        {
            "jsonrpc": "2.0",
            "id": 4,
            "error": {
                "code": -32602,
                "message": "invalid params",
                "data": {"param": "text", "expected": "string"},
            },
        },
    ]
    release.set()
    assert await host.recv() == {"jsonrpc": "2.0", "id": 1, "result": "registered"}
    assert dispatched == ["prompt.submit"]


async def test_after_response_hooks_follow_the_response_in_order(
    make_peer: PeerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    holder: dict[str, rpc.RpcPeer] = {}

    def failing_hook() -> None:
        raise RuntimeError("hook failed")

    async def dispatch(message: dict[str, Any]) -> dict[str, Any]:
        peer = holder["peer"]
        rpc.after_response(lambda: peer.notify("hook", {"n": 1}))
        rpc.after_response(failing_hook)
        peer.after_response(lambda: peer.notify("hook", {"n": 2}))
        peer.notify("before", {})
        await asyncio.sleep(0.01)
        return {"result": "done"}

    def fast_path(message: dict[str, Any]) -> dict[str, Any] | None:
        if message["method"] == "quick":
            rpc.after_response(lambda: holder["peer"].notify("hook", {"n": "quick"}))
            return {"result": "quick"}
        return None

    peer, host = await make_peer(dispatch, fast_path=fast_path)
    holder["peer"] = peer
    await host.send({"jsonrpc": "2.0", "id": 1, "method": "session.create"})
    assert await host.recv_many(4) == [
        {"jsonrpc": "2.0", "method": "before", "params": {}},
        {"jsonrpc": "2.0", "id": 1, "result": "done"},
        {"jsonrpc": "2.0", "method": "hook", "params": {"n": 1}},
        {"jsonrpc": "2.0", "method": "hook", "params": {"n": 2}},
    ]
    assert any("after-response hook" in r.getMessage() for r in caplog.records)
    await host.send({"jsonrpc": "2.0", "id": 2, "method": "quick"})
    assert await host.recv_many(2) == [
        {"jsonrpc": "2.0", "id": 2, "result": "quick"},
        {"jsonrpc": "2.0", "method": "hook", "params": {"n": "quick"}},
    ]
    with pytest.raises(RuntimeError):
        rpc.after_response(lambda: None)


# ---------------------------------------------------------------------------- outbound requests


async def test_outbound_requests_are_correlated_out_of_order(make_peer: PeerFactory) -> None:
    peer, host = await make_peer()
    first = asyncio.create_task(peer.request("fs/read_text_file", {"path": "/a"}))
    second = asyncio.create_task(peer.request("fs/read_text_file", {"path": "/b"}))
    sent = await host.recv_many(2)
    assert [(m["id"], m["params"]["path"]) for m in sent] == [(0, "/a"), (1, "/b")]
    assert all(m["method"] == "fs/read_text_file" and m["jsonrpc"] == "2.0" for m in sent)
    # The host's own request id 0 is a different id space: it must reach dispatch, not the correlator.
    await host.send({"jsonrpc": "2.0", "id": 0, "method": "echo", "params": {"mine": True}})
    assert await host.recv() == {"jsonrpc": "2.0", "id": 0, "result": {"mine": True}}
    await host.send({"jsonrpc": "2.0", "id": 1, "result": {"content": "B"}})
    await host.send({"jsonrpc": "2.0", "id": 0, "result": {"content": "A"}})
    assert await asyncio.wait_for(second, 5) == {"content": "B"}
    assert await asyncio.wait_for(first, 5) == {"content": "A"}


async def test_outbound_error_null_result_unknown_id_and_timeout(
    make_peer: PeerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hermes_core.rpc")
    peer, host = await make_peer(options=rpc.ACP_OPTIONS)

    failing = asyncio.create_task(peer.request("session/request_permission", {"sessionId": "s"}))
    sent = await host.recv()
    await host.send(
        {"jsonrpc": "2.0", "id": sent["id"], "error": {"code": -32602, "message": "bad", "data": {"x": 1}}}
    )
    with pytest.raises(rpc.RpcError) as info:
        await asyncio.wait_for(failing, 5)
    assert (info.value.code, info.value.message, info.value.data) == (-32602, "bad", {"x": 1})

    nulled = peer.start_request("fs/write_text_file", {"path": "/x", "content": ""})
    assert (await host.recv())["id"] == nulled.id == 1
    await host.send({"jsonrpc": "2.0", "id": 1, "result": None})
    assert await nulled == {}

    await host.send({"jsonrpc": "2.0", "id": 99, "result": {}})
    await host.send({"jsonrpc": "2.0", "id": "1", "result": {}})
    with pytest.raises(rpc.RpcTimeout) as timed_out:
        await peer.request("fs/read_text_file", {"path": "/slow"}, timeout=0.05)
    assert isinstance(timed_out.value, asyncio.TimeoutError)
    assert timed_out.value.request_id == 2
    assert (await host.recv())["id"] == 2
    await host.send({"jsonrpc": "2.0", "id": 2, "result": {"late": True}})  # dropped, not a crash
    await host.send({"jsonrpc": "2.0", "id": 7, "method": "echo"})
    assert (await host.recv())["id"] == 7
    await host.assert_silent()
    unknown = [r for r in caplog.records if "unknown id" in r.getMessage()]
    assert [r.getMessage().rsplit(" ", 1)[1] for r in unknown] == ["99", "'1'"]
    assert all(r.levelno == logging.WARNING for r in unknown)
    assert any("late response to abandoned id 2" in r.getMessage() for r in caplog.records)


async def test_eof_fails_pending_requests_and_run_returns(make_peer: PeerFactory) -> None:
    peer, host = await make_peer()
    pending = asyncio.create_task(peer.request("session/request_permission", {}))
    await host.recv()
    host.close_input()
    with pytest.raises(rpc.PeerClosedError):
        await asyncio.wait_for(pending, 5)
    await asyncio.wait_for(peer.closed.wait(), 5)
    assert peer.close_reason == "eof"
    with pytest.raises(rpc.PeerClosedError):
        peer.start_request("fs/read_text_file", {})
    # The writer still works after EOF, for final events.
    assert peer.notify("event", {"type": "message.complete"})
    assert await host.recv() == {"jsonrpc": "2.0", "method": "event", "params": {"type": "message.complete"}}


async def test_lost_output_stops_the_peer_quietly(make_peer: PeerFactory) -> None:
    peer, host = await make_peer()
    host.read_transport.close()  # the host stops reading: our next write hits EPIPE
    await asyncio.sleep(0.05)
    peer.notify("event", {"n": 1})
    await asyncio.wait_for(peer.closed.wait(), 5)
    assert peer.close_reason == "output_lost"
    assert peer.notify("event", {"n": 2}) is False
    assert await peer.flush(1) is False


# ---------------------------------------------------------------------------- other endpoints


async def test_regular_files_on_both_sides(tmp_path: Path) -> None:
    source = tmp_path / "in.ndjson"
    source.write_bytes(
        frame({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"a": 1}})
        + b"garbage\n"
        + b'{"jsonrpc":"2.0","id":2,"method":"echo"}'  # no final newline: still a frame
    )
    sink = tmp_path / "out.ndjson"
    in_fd = os.open(source, os.O_RDONLY)
    out_fd = os.open(sink, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        peer = rpc.RpcPeer(reader=in_fd, writer=out_fd, dispatch=echo, options=rpc.ACP_OPTIONS)
        assert await asyncio.wait_for(peer.run(), 5) == "eof"
        await peer.aclose(cancel_handlers=False)
    finally:
        os.close(in_fd)
        os.close(out_fd)
    lines = [strict_loads(line) for line in sink.read_bytes().splitlines()]
    assert {line["id"] for line in lines} == {1, None, 2}
    assert sorted(json.dumps(line, sort_keys=True) for line in lines) == sorted(
        json.dumps(x, sort_keys=True)
        for x in [
            {"jsonrpc": "2.0", "id": 1, "result": {"a": 1}},
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
            {"jsonrpc": "2.0", "id": 2, "result": {}},
        ]
    )


async def test_asyncio_streams_as_endpoints() -> None:
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=ours)
    host_reader, host_writer = await asyncio.open_connection(sock=theirs)
    peer = rpc.RpcPeer(reader=reader, writer=writer, dispatch=echo)
    runner = asyncio.create_task(peer.run())
    host_writer.write(frame({"id": 1, "method": "echo", "params": {"via": "socket"}}))
    await host_writer.drain()
    reply = strict_loads(await asyncio.wait_for(host_reader.readline(), 5))
    assert reply == {"jsonrpc": "2.0", "id": 1, "result": {"via": "socket"}}
    host_writer.close()
    assert await asyncio.wait_for(runner, 5) == "eof"
    await peer.aclose()
    writer.close()


def test_encode_frame_is_compact_and_strict() -> None:
    assert rpc.encode_frame({"a": [1, "é\u2028"], "b": None}) == '{"a":[1,"é\u2028"],"b":null}\n'.encode()
    assert rpc.encode_frame({"s": "\ud800"}) == b'{"s":"\\ud800"}\n'  # lone surrogate stays valid
    with pytest.raises(ValueError):
        rpc.encode_frame({"x": float("nan")})


# ---------------------------------------------------------------------------- real subprocess

CHILD = r"""
import asyncio, logging, os, subprocess, sys
from hermes_core import rpc

async def main():
    guard = rpc.protect_stdout(sys.argv[1])
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)

    async def dispatch(message):
        method = message["method"]
        if method == "echo":
            return {"result": message["params"]}
        if method == "stray":
            print("stray print")
            os.write(1, b"stray fd1\n")
            subprocess.run([sys.executable, "-c", "print('child stray')"], check=True)
            return {"result": {}}
        if method == "inherit":
            probe = subprocess.run(
                [sys.executable, "-c", f"import os; os.fstat({guard.frame_fd})"],
                close_fds=False, capture_output=True,
            )
            return {"result": {"child_has_frame_fd": probe.returncode == 0}}
        raise RuntimeError("kaboom")

    options = rpc.ACP_OPTIONS if sys.argv[1] != "stderr" else rpc.TUI_OPTIONS
    peer = rpc.RpcPeer(reader=0, writer=guard.frame_fd, dispatch=dispatch, options=options)
    peer.notify("ready", {})
    reason = await peer.run()
    await peer.aclose(cancel_handlers=False)
    print("stopped:", reason, file=sys.stderr)

asyncio.run(main())
"""


def _run_child(tmp_path: Path, target: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return subprocess.run(
        [sys.executable, str(script), target], input=stdin, capture_output=True, timeout=30, check=False
    )


def _requests() -> bytes:
    return b"".join(
        frame({"jsonrpc": "2.0", "id": i, "method": m, "params": p})
        for i, (m, p) in enumerate(
            [
                ("echo", {"t": "x\u2028y\u2029z"}),
                ("stray", {}),
                ("boom", {}),
                ("inherit", {}),
            ]
        )
    )


def test_subprocess_stdout_carries_only_frames(tmp_path: Path) -> None:
    done = _run_child(tmp_path, "stderr", _requests())
    assert done.returncode == 0, done.stderr.decode()
    frames = [strict_loads(line) for line in done.stdout.splitlines()]  # every stdout line is a frame
    assert frames[0] == {"jsonrpc": "2.0", "method": "ready", "params": {}}
    by_id = {f["id"]: f for f in frames[1:]}
    assert by_id[0]["result"] == {"t": "x\u2028y\u2029z"}
    assert by_id[1]["result"] == {}
    assert by_id[3]["result"] == {"child_has_frame_fd": False}
    error_id = by_id[2]["error"]["data"]["error_id"]
    stderr = done.stderr.decode()
    for stray in ("stray print", "stray fd1", "child stray"):
        assert stray in stderr
        assert stray.encode() not in done.stdout
    assert error_id in stderr and "Traceback" in stderr and "kaboom" in stderr
    assert b"Traceback" not in done.stdout
    assert "stopped: eof" in stderr


def test_subprocess_stray_output_goes_to_log_file(tmp_path: Path) -> None:
    log = tmp_path / "acp.log"
    done = _run_child(tmp_path, str(log), _requests())
    assert done.returncode == 0, done.stderr.decode()
    frames = [strict_loads(line) for line in done.stdout.splitlines()]
    assert len(frames) == 5
    assert {f["id"]: f for f in frames[1:]}[2]["error"]["data"].keys() == {"errorId"}
    logged = log.read_text()
    for stray in ("stray print", "stray fd1", "child stray"):
        assert stray in logged
        assert stray.encode() not in done.stdout and stray.encode() not in done.stderr


def test_subprocess_exits_quietly_when_host_stops_reading(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen(
        [sys.executable, str(script), "stderr"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stdin is not None
    assert strict_loads(child.stdout.readline())["method"] == "ready"
    child.stdout.close()
    child.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "echo"}))
    child.stdin.flush()  # stdin stays open: only the failed write can stop the child
    assert child.wait(timeout=20) == 0
    assert child.stderr is not None
    stderr = child.stderr.read()
    child.stdin.close()
    child.stderr.close()
    assert b"Traceback" not in stderr
    assert b"stopped: output_lost" in stderr
