"""The slow-consumer close (docs/reference/tui-gateway.md#websocket): a WebSocket client that stops reading is
closed with 1013.

The client is a raw socket speaking just enough WebSocket to send frames, so "stops reading" means
exactly that: nothing is read from the socket while more than 64 MiB of events pile up. The session
must survive: a new connection replays it with ``session.events.since`` and can run the next turn.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.timing import eventually
from tests.tui.client import WsClient, WsServer, write_config

TOKEN = "slow-consumer-token-0123456789"
BIG = 7 * 1024 * 1024  # under the 8 MiB frame cap; echoed twice (deltas + message.complete)
SESSIONS = 6  # 6 x ~14 MiB > 64 MiB plus whatever the kernel's socket buffers absorb


class RawWs:
    """A minimal WebSocket client over a blocking socket (client frames are masked)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # A small receive buffer: unread data backs up into the server, not into our kernel.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        self.sock.connect((parts.hostname or "127.0.0.1", parts.port or 80))
        self.sock.settimeout(15)
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        request = (
            f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {TOKEN}\r\n\r\n"
        )
        self.sock.sendall(request.encode("ascii"))
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            assert chunk, "closed during the handshake"
            self.buf += chunk
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        self._ids = 0

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError("socket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send_text(self, text: str, opcode: int = 0x1) -> None:
        data = text.encode("utf-8")
        mask = os.urandom(4)
        size = len(data)
        if size < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
        elif size < 1 << 16:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
        masked = _mask(data, mask)
        self.sock.sendall(header + mask + masked)

    def call(self, method: str, **params: Any) -> int:
        self._ids += 1
        self.send_text(json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}))
        return self._ids

    def next_frame(self) -> tuple[int, bytes]:
        """Read one whole message: ``(opcode, payload)``."""
        b1, b2 = self._exact(2)
        size = b2 & 0x7F
        if size == 126:
            size = struct.unpack("!H", self._exact(2))[0]
        elif size == 127:
            size = struct.unpack("!Q", self._exact(8))[0]
        return b1 & 0x0F, self._exact(size)

    def read_until_response(self, request_id: int) -> dict[str, Any]:
        while True:
            opcode, payload = self.next_frame()
            assert opcode == 0x1, opcode
            frame = json.loads(payload)
            if frame.get("id") == request_id:
                result: dict[str, Any] = frame["result"]
                return result

    def close(self) -> None:
        self.sock.close()


def _mask(data: bytes, mask: bytes) -> bytes:
    """XOR ``data`` with the 4-byte mask (fast, via big integers)."""
    if not data:
        return data
    reps = (len(data) + 3) // 4
    key = int.from_bytes((mask * reps)[: len(data)], "big")
    return (int.from_bytes(data, "big") ^ key).to_bytes(len(data), "big")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[WsServer]:
    """A WebSocket gateway whose ring keeps everything, so the replay is complete."""
    home = tmp_path / "home"
    write_config(home, 'model = "mock:echo"\n[tui]\nring_bytes = 268435456\n')
    srv = WsServer(home, TOKEN)
    yield srv
    srv.stop()


async def test_slow_consumer_closed_1013_and_session_survives(server: WsServer) -> None:
    """More than 64 MiB unread → close 1013; the sessions replay and take the next turn."""
    raw = RawWs(server.url)
    kind, ready = raw.next_frame()
    assert kind == 0x1 and json.loads(ready)["params"]["type"] == "gateway.ready"
    sids = [raw.read_until_response(raw.call("session.create"))["session_id"] for _ in range(SESSIONS)]
    # From here on nothing is read: each turn echoes ~7 MiB twice (deltas, then message.complete).
    for sid in sids:
        raw.call("prompt.submit", session_id=sid, text="x" * BIG)

    watcher = await WsClient.connect(server.url, headers={"Authorization": f"Bearer {TOKEN}"})
    try:

        async def all_idle() -> bool:
            states = [await watcher.call("session.status", session_id=s) for s in sids]
            return all(not st["running"] and st["message_count"] >= 2 for st in states)

        await eventually(all_idle, timeout=40, interval=0.2, what="the turns to finish")
    finally:
        await watcher.close()

    # Now read what the server wrote before it gave up on us: frames, then a 1013 close.
    seen: dict[str, int] = {}
    code = None
    while True:
        try:
            opcode, payload = raw.next_frame()
        except EOFError:
            break
        if opcode == 0x8:
            code = struct.unpack("!H", payload[:2])[0]
            break
        frame = json.loads(payload)
        params = frame.get("params") or {}
        if frame.get("method") == "event" and params.get("seq"):
            seen[params["session_id"]] = params["seq"]
    raw.close()
    assert code == 1013

    client = await WsClient.connect(server.url, headers={"Authorization": f"Bearer {TOKEN}"}, max_msg_size=0)
    try:
        for sid in sids:
            last = seen.get(sid, 0)
            replay = await client.call("session.events.since", session_id=sid, last_seen=last)
            assert replay["truncated"] is False
            seqs = [e["seq"] for e in replay["events"]]
            # The log's numbers: increasing, after the cursor, up to latest_seq, no gap event.
            assert seqs == sorted(set(seqs)) and seqs[0] > last and seqs[-1] == replay["latest_seq"]
            assert not [e for e in replay["events"] if e["type"] == "session.gap"]
            completes = [e for e in replay["events"] if e["type"] == "message.complete"]
            if completes:
                assert completes[0]["payload"]["text"] == "You said: " + "x" * BIG
            assert replay["events"][-1]["type"] == "session.info"
            assert replay["events"][-1]["payload"]["running"] is False
        sid = sids[0]
        latest = (await client.call("session.events.since", session_id=sid, last_seen=0))["latest_seq"]
        assert (await client.call("prompt.submit", session_id=sid, text="still here"))[
            "status"
        ] == "streaming"
        done = await client.wait(lambda: client.events(sid, "message.complete"), 15)
        assert done[0]["payload"]["text"] == "You said: still here"
        assert done[0]["seq"] > latest
    finally:
        await client.close()
