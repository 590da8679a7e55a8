"""The WebSocket transport over a real socket with aiohttp's client (checks 1, 6, 11;
docs/reference/tui-gateway.md#websocket, #connections-and-disconnects)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.timing import eventually
from tests.tui.client import HERMES, WsClient, WsServer, hermes_env

TOKEN = "test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def server(shared_home: Path) -> Iterator[WsServer]:
    """``hermes tui --ws 127.0.0.1:0`` with a known token and a 1 s orphan grace, for the module."""
    srv = WsServer(shared_home, TOKEN, args=["--orphan-grace", "1"])
    yield srv
    srv.stop()


def _bearer() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


async def _expect_close(url: str, code: int, **kw: object) -> None:
    client = await WsClient.connect(url, **kw)  # type: ignore[arg-type]
    try:
        assert await client.wait_closed() == code
        assert client.frames == []
    finally:
        await client.close()


async def test_ws_auth(server: WsServer) -> None:
    """Check 6: no or wrong token → 4401, no frame; bearer, subprotocol or (on this loopback
    listener) ``?token=`` → ready; bad origin → 4403."""
    await _expect_close(server.url, 4401)
    await _expect_close(f"{server.url}?token=wrong", 4401)
    await _expect_close(f"{server.url}?token={TOKEN}&token={TOKEN}", 4401)
    await _expect_close(f"{server.url}?token={TOKEN}", 4401, headers={"Authorization": "Bearer wrong"})
    in_url = await WsClient.connect(f"{server.url}?token={TOKEN}")
    assert (await in_url.wait(lambda: in_url.frames))[0]["params"]["type"] == "gateway.ready"
    await in_url.close()
    await _expect_close(server.url, 4401, headers={"Authorization": "Bearer wrong"})
    await _expect_close(server.url, 4401, protocols=(f"hermes.token.{TOKEN}",))
    await _expect_close(server.url, 4403, headers={**_bearer(), "Origin": "http://evil.example"})
    bearer = await WsClient.connect(server.url, headers=_bearer())
    ready = await bearer.wait(lambda: bearer.frames)
    assert ready[0]["params"]["type"] == "gateway.ready"
    await bearer.close()
    sub = await WsClient.connect(server.url, protocols=("hermes.v1", f"hermes.token.{TOKEN}"))
    assert sub.ws.protocol == "hermes.v1"
    first = (await sub.wait(lambda: sub.frames))[0]["params"]
    assert first["type"] == "gateway.ready" and first["session_id"] == "" and "seq" not in first
    assert first["payload"]["protocol"]["version"] == 1 and first["payload"]["skin"]
    await sub.close()
    local = await WsClient.connect(server.url, headers={**_bearer(), "Origin": "http://127.0.0.1:3000"})
    await local.wait(lambda: local.frames)
    await local.close()


async def test_ws_token_in_the_url_is_refused_off_loopback(shared_home: Path) -> None:
    """A listener that is not loopback (``--allow-remote``) refuses ``?token=`` with 4401, even
    when correct: a URL is logged and shared too easily; headers still work."""
    srv = WsServer(shared_home, TOKEN, args=["--allow-remote"], bind="0.0.0.0:0")
    try:
        url = srv.url.replace("0.0.0.0", "127.0.0.1")
        await _expect_close(f"{url}?token={TOKEN}", 4401)
        bearer = await WsClient.connect(url, headers=_bearer())
        assert (await bearer.wait(lambda: bearer.frames))[0]["params"]["type"] == "gateway.ready"
        await bearer.close()
    finally:
        srv.stop()


async def test_ws_wrong_path_is_404(server: WsServer) -> None:
    """Any path other than /api/ws gets HTTP 404."""
    async with aiohttp.ClientSession() as http:
        async with http.get(server.url.replace("ws://", "http://").replace("/api/ws", "/other")) as resp:
            assert resp.status == 404


async def test_ws_bad_frames_keep_the_connection(server: WsServer) -> None:
    """A binary frame → -32600 and the connection stays; bad JSON → -32700; a pretty-printed frame works."""
    client = await WsClient.connect(server.url, headers=_bearer())
    await client.ws.send_bytes(b"\x00\x01")
    await client.ws.send_str("{not json")
    await client.ws.send_str('{\n  "id": 5,\n  "method": "gateway.ping"\n}')
    await client.wait(lambda: client.responses.get(5))
    codes = [f["error"]["code"] for f in client.frames if "error" in f and f.get("id") is None]
    assert codes == [-32600, -32700]
    assert (await client.call("gateway.ping"))["ok"] is True
    await client.close()


async def _raw_close_code_after_oversized_header(url: str) -> int:
    """Open a raw WebSocket, announce a 9 MiB text frame and return the server's close code."""
    import base64
    import os
    import struct
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {TOKEN}\r\n\r\n"
        ).encode()
    )
    await reader.readuntil(b"\r\n\r\n")
    writer.write(bytes([0x81, 0x80 | 127]) + struct.pack(">Q", 9 * 1024 * 1024) + os.urandom(4))
    await writer.drain()
    code = -1
    while True:
        head = await asyncio.wait_for(reader.readexactly(2), 10)
        length = head[1] & 0x7F
        if length == 126:
            length = struct.unpack(">H", await reader.readexactly(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", await reader.readexactly(8))[0]
        body = await reader.readexactly(length)
        if head[0] & 0x0F == 0x8:
            code = struct.unpack(">H", body[:2])[0]
            break
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return code


async def test_ws_oversized_frame_closes_1009_and_sessions_survive(server: WsServer) -> None:
    """A frame over 8 MiB closes with 1009; the connection's sessions survive and can be resumed."""
    client = await WsClient.connect(server.url, headers=_bearer())
    sid = (await client.call("session.create"))["session_id"]
    await client.close()
    assert await _raw_close_code_after_oversized_header(server.url) == 1009
    again = await WsClient.connect(server.url, headers=_bearer())
    snap = await again.call("session.resume", session_id=sid)
    assert snap["session_id"] == sid
    await again.close()


async def test_ws_replay_after_reconnect(server: WsServer) -> None:
    """Check 11: drop mid-turn and reconnect; events.since gives k+1…latest; live follows, no duplicates."""
    first = await WsClient.connect(server.url, headers=_bearer())
    sid = (await first.call("session.create"))["session_id"]
    await first.call("prompt.submit", session_id=sid, text="[[tokens 400]] [[delay 5]]")
    await first.wait(lambda: len(first.events(sid, "message.delta")) >= 2)
    seen = [e["seq"] for e in first.events(sid) if "seq" in e]
    k = seen[-1]
    await first.close()
    # No wait for the server to notice the drop: events.since rebinds the session to the new
    # connection, and the old connection's clean-up only detaches sessions still bound to it.
    second = await WsClient.connect(server.url, headers=_bearer())
    await second.wait(lambda: second.frames)
    replay = await second.call("session.events.since", session_id=sid, last_seen=k)
    latest = replay["latest_seq"]
    replayed = [e["seq"] for e in replay["events"]]
    assert replayed == sorted(set(replayed)) and all(k < n <= latest for n in replayed)
    assert not replayed or replayed[-1] == latest
    assert replay["truncated"] is False and replay["epoch"]
    assert not any(e["type"] == "session.gap" for e in replay["events"])
    await second.wait(lambda: second.events(sid, "message.complete"), timeout=20)
    live = [e["seq"] for e in second.events(sid) if "seq" in e]
    assert live and live[0] > latest and live == sorted(set(live))
    events = replay["events"] + second.events(sid)
    text = "".join(
        e["payload"]["text"]
        for e in first.events(sid, "message.delta") + [e for e in events if e["type"] == "message.delta"]
    )
    complete = second.events(sid, "message.complete")[0]["payload"]
    assert text == complete["text"]
    with pytest.raises(Exception) as ahead:
        await second.call("session.events.since", session_id=sid, last_seen=10**6)
    assert getattr(ahead.value, "code", None) == -32602
    assert "ahead" in str(getattr(ahead.value, "message", ahead.value))
    with pytest.raises(Exception) as bad:
        await second.call("session.events.since", session_id=sid, last_seen=-1)
    assert getattr(bad.value, "code", None) == -32602
    await second.close()


async def test_ws_disconnect_close_and_orphans(server: WsServer) -> None:
    """docs/reference/tui-gateway.md#connections-and-disconnects: close_on_disconnect sessions close; others
    are detached, then reclaimed after the grace."""
    watcher = await WsClient.connect(server.url, headers=_bearer())
    owner = await WsClient.connect(server.url, headers=_bearer())
    temporary = (await owner.call("session.create", close_on_disconnect=True))["session_id"]
    kept = (await owner.call("session.create"))["session_id"]
    await owner.call("prompt.submit", session_id=kept, text="keep me")
    await owner.wait(lambda: owner.events(kept, "message.complete"))
    await owner.close()

    async def active_ids() -> list[str]:
        return [s["id"] for s in (await watcher.call("session.active_list"))["sessions"]]

    async def temporary_closed() -> bool:
        return temporary not in await active_ids()

    await eventually(temporary_closed, what="the close_on_disconnect session to close")
    assert kept in await active_ids()
    reclaimed = await watcher.wait(
        lambda: [e for e in watcher.events("", "session.reclaimed") if e["payload"]["session_id"] == kept],
        timeout=10,
    )
    assert reclaimed[0]["payload"] == {"session_id": kept, "reason": "orphan"}
    assert "seq" not in reclaimed[0]
    assert kept not in [s["id"] for s in (await watcher.call("session.active_list"))["sessions"]]
    resumed = await watcher.call("session.resume", session_id=kept)
    assert [m["text"] for m in resumed["messages"]] == ["keep me", "You said: keep me"]
    await watcher.close()


def test_ws_refuses_a_remote_host_without_allow_remote(home: Path) -> None:
    """A non-loopback --ws host is a usage error unless --allow-remote is given."""
    done = subprocess.run(
        [HERMES, "tui", "--ws", "0.0.0.0:0"],
        env=hermes_env(home, {"HERMES_TUI_TOKEN": TOKEN}),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "--allow-remote" in done.stderr


def test_ws_address_must_be_host_colon_port(home: Path) -> None:
    """A malformed --ws value or a port outside 0-65535 is a usage error naming the value."""
    for where in ("nonsense", "127.0.0.1:99999", "127.0.0.1:-1", "[::1]99"):
        done = subprocess.run(
            [HERMES, "tui", "--ws", where],
            env=hermes_env(home, {"HERMES_TUI_TOKEN": TOKEN}),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 2, (where, done.stderr)
        assert f"--ws expects HOST:PORT with a port 0-65535, got {where!r}" in done.stderr


def test_ws_generates_a_token_file(home: Path) -> None:
    """Without a token, one is written to <data dir>/tui-gateway.token with mode 0600."""
    srv = WsServer(home, "")
    try:
        path = home / "tui-gateway.token"
        assert path.stat().st_mode & 0o777 == 0o600
        token = path.read_text().strip()
        assert len(token) >= 40
        assert token not in "".join(srv.stderr_lines)
    finally:
        srv.stop()


async def test_ws_token_file_and_allowed_origin(tmp_path: Path, home: Path) -> None:
    """--token-file wins over the environment; --allow-origin admits a listed non-loopback origin."""
    token_file = tmp_path / "token"
    token_file.write_text("from-the-file\n")
    srv = WsServer(
        home, "from-the-env", args=["--token-file", str(token_file), "--allow-origin", "https://app.example"]
    )
    try:
        await _expect_close(srv.url, 4401, headers={"Authorization": "Bearer from-the-env"})
        ok = await WsClient.connect(
            srv.url, headers={"Authorization": "Bearer from-the-file", "Origin": "https://app.example"}
        )
        await ok.wait(lambda: ok.frames)
        assert ok.frames[0]["params"]["type"] == "gateway.ready"
        await ok.close()
    finally:
        srv.stop()


async def test_ws_token_never_reaches_stderr(home: Path) -> None:
    """A token offered without ``hermes.v1`` (or with a wrong value) is refused and never logged."""
    token = "secret-ws-token-5f3a9c1e7d"
    srv = WsServer(home, token)
    try:
        for protocols in (
            (f"hermes.token.{token}",),
            ("other.v2", f"hermes.token.{token}"),
            (f"hermes.token.{token}", "hermes.v0"),
        ):
            await _expect_close(srv.url, 4401, protocols=protocols)
        # The same token through an accepted channel still works afterwards.
        good = await WsClient.connect(srv.url, protocols=("hermes.v1", f"hermes.token.{token}"))
        await good.wait(lambda: good.frames)
        await good.close()
    finally:
        assert srv.stop() == 0
    text = "".join(srv.stderr_lines)
    assert "listening on" in text
    assert token not in text


def _ws_in_a_terminal(home: Path) -> tuple[subprocess.Popen[bytes], int, list[str]]:
    """Start ``hermes tui --ws`` with a pseudo-terminal as its controlling terminal and stdin."""
    import fcntl
    import os
    import pty
    import termios
    import threading

    master, slave = pty.openpty()

    def take_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [HERMES, "tui", "--ws", "127.0.0.1:0"],
        stdin=slave,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=hermes_env(home, {"HERMES_TUI_TOKEN": TOKEN}),
        cwd=str(home),
        start_new_session=True,
        preexec_fn=take_terminal,  # the child needs the pty as its controlling terminal
    )
    os.close(slave)
    lines: list[str] = []
    listening = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            lines.append(raw.decode("utf-8", "replace"))
            if "listening on ws://" in lines[-1]:
                listening.set()
        listening.set()

    threading.Thread(target=read, daemon=True).start()
    assert listening.wait(30) and proc.poll() is None, "".join(lines)
    return proc, master, lines


@pytest.mark.parametrize("key", [b"\x03", b"\x04"], ids=["ctrl-c", "ctrl-d"])
def test_ws_stops_on_ctrl_c_and_ctrl_d_in_a_terminal(home: Path, key: bytes) -> None:
    """In a terminal, Ctrl-C (SIGINT) and Ctrl-D (end of input) stop the WebSocket server cleanly."""
    import os

    proc, master, lines = _ws_in_a_terminal(home)
    try:
        os.write(master, key)
        assert proc.wait(15) == 0, "".join(lines)
        assert "Traceback" not in "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def test_ws_keeps_running_when_a_terminal_line_is_typed(home: Path) -> None:
    """Ordinary typing in the terminal does not stop the server; SIGINT still does."""
    import os
    import signal
    import urllib.error
    import urllib.request

    proc, master, lines = _ws_in_a_terminal(home)
    try:
        os.write(master, b"hello\n")
        url = next(line for line in lines if "listening on" in line).split("listening on ", 1)[1].strip()
        with pytest.raises(urllib.error.HTTPError):  # a plain GET on the ws path: the server answers
            urllib.request.urlopen(url.replace("ws://", "http://"), timeout=10)
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
