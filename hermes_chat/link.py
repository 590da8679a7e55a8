"""The two ways to reach a gateway: a ``hermes tui`` spawned on stdio, or a WebSocket.

A :class:`Link` carries JSON-RPC frames one way or the other and says why it ended; a
:class:`Connector` makes a fresh link each time the client (re)connects. The spawned gateway is
started by :mod:`hermes_chat.spawn` before anything else of the chat is loaded, so its own
start-up runs while the client loads.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hermes_chat.spawn import gateway_argv as gateway_argv  # re-exported: tests, hosts
from hermes_chat.spawn import spawn_gateway as spawn_gateway

Frame = dict[str, Any]

# A resumed session's snapshot can be large; frames are never split, so allow big lines.
MAX_FRAME = 64 * 1024 * 1024
# Close codes after which reconnecting cannot help (docs/reference/tui-gateway.md#websocket).
REFUSED = {4401: "the gateway refused the token", 4403: "the gateway refused this origin"}


class LinkError(Exception):
    """Connecting failed; ``fatal`` when trying again cannot help (a refused token)."""

    def __init__(self, message: str, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


class Link(Protocol):
    """One connection to a gateway."""

    ended: str
    """Why the link ended, for people (empty while it is open)."""
    fatal: bool
    """The gateway refused us: reconnecting with the same credentials cannot help."""

    async def send(self, frame: Frame) -> None:
        """Write one frame; raise :class:`ConnectionError` when the link is gone."""
        ...

    async def receive(self) -> Frame | None:
        """Return the next frame, or None once the link has ended (see :attr:`ended`)."""
        ...

    async def close(self) -> None:
        """End the link (and a spawned gateway with it)."""
        ...


class Connector(Protocol):
    """Makes links to one gateway: the first and every reconnection."""

    kind: str
    """``spawned`` or ``attached``."""

    def describe(self) -> str:
        """Return how the gateway is reached, for messages."""
        ...

    async def connect(self) -> Link:
        """Open a new link; raise :class:`LinkError` when it cannot be made."""
        ...


def _decode(line: bytes | str) -> Frame | None:
    try:
        frame = json.loads(line)
    except ValueError:
        return None
    return frame if isinstance(frame, dict) else None


def _encode(frame: Frame) -> str:
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":"))


# -- a spawned gateway -----------------------------------------------------------------------------


class StdioLink:
    """Frames over the pipes of a spawned gateway process."""

    def __init__(self, proc: subprocess.Popen[bytes], reader: asyncio.StreamReader, writer: Any) -> None:
        self.proc = proc
        self._reader = reader
        self._writer = writer
        self.ended = ""
        self.fatal = False

    @classmethod
    async def wrap(cls, proc: subprocess.Popen[bytes]) -> StdioLink:
        """Attach asyncio streams to an already started process's pipes."""
        assert proc.stdout is not None and proc.stdin is not None
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_FRAME)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), proc.stdout)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, proc.stdin)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        return cls(proc, reader, writer)

    async def send(self, frame: Frame) -> None:
        if self._writer.is_closing():
            raise ConnectionError(self.ended or "the gateway's stdin is closed")
        self._writer.write((_encode(frame) + "\n").encode("utf-8"))
        await self._writer.drain()

    async def receive(self) -> Frame | None:
        while True:
            try:
                line = await self._reader.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue  # a frame over MAX_FRAME: dropped, like any unreadable line
            if not line:
                code = await asyncio.to_thread(self.proc.wait)
                self.ended = self.ended or f"the gateway stopped (exit code {code})"
                return None
            frame = _decode(line)
            if frame is not None:
                return frame

    async def close(self) -> None:
        self.ended = self.ended or "closed"
        try:
            self._writer.close()
        except (OSError, RuntimeError):
            pass
        try:
            await asyncio.wait_for(asyncio.to_thread(self.proc.wait), 5)
        except TimeoutError:
            self.proc.terminate()
            try:
                await asyncio.wait_for(asyncio.to_thread(self.proc.wait), 3)
            except TimeoutError:
                self.proc.kill()
                await asyncio.to_thread(self.proc.wait)


@dataclass
class SpawnConnector:
    """Starts ``hermes tui`` on stdio; a gateway started early is used by the first connect."""

    argv: list[str]
    cwd: str
    log_path: Path | None = None
    early: subprocess.Popen[bytes] | None = None
    kind: str = field(default="spawned", init=False)
    current: subprocess.Popen[bytes] | None = field(default=None, init=False)

    def describe(self) -> str:
        return "hermes tui (spawned)"

    async def connect(self) -> Link:
        proc, self.early = self.early, None
        if proc is None or proc.poll() is not None:
            try:
                proc = spawn_gateway(self.argv, self.cwd, self.log_path)
            except OSError as exc:
                raise LinkError(f"cannot start hermes tui: {exc}") from exc
        self.current = proc
        return await StdioLink.wrap(proc)

    def log_tail(self, lines: int = 5) -> str:
        """Return the last lines the gateway wrote on stderr (its log file)."""
        if self.log_path is None:
            return ""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])


# -- an attached gateway ---------------------------------------------------------------------------


class WsLink:
    """Frames over a WebSocket (one JSON object per text frame)."""

    def __init__(self, session: Any, ws: Any) -> None:
        self._session = session
        self._ws = ws
        self.ended = ""
        self.fatal = False

    async def send(self, frame: Frame) -> None:
        if self._ws.closed:
            raise ConnectionError(self.ended or "the WebSocket is closed")
        await self._ws.send_str(_encode(frame))

    async def receive(self) -> Frame | None:
        import aiohttp

        while True:
            msg = await self._ws.receive()
            if msg.type == aiohttp.WSMsgType.TEXT:
                frame = _decode(msg.data)
                if frame is not None:
                    return frame
                continue
            if msg.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.PING, aiohttp.WSMsgType.PONG):
                continue
            code = self._ws.close_code
            if code in REFUSED:
                self.fatal = True
                self.ended = f"{REFUSED[code]} (close code {code})"
            elif code == 1001:
                self.ended = "the gateway is shutting down (close code 1001)"
            else:
                self.ended = f"the connection closed (close code {code})" if code else "the connection closed"
            await self._session.close()
            return None

    async def close(self) -> None:
        self.ended = self.ended or "closed"
        try:
            await self._ws.close()
        finally:
            await self._session.close()


@dataclass
class WsConnector:
    """Connects to ``ws://host:port/api/ws`` with a bearer token."""

    url: str
    token: str
    kind: str = field(default="attached", init=False)

    def describe(self) -> str:
        return self.url

    async def connect(self) -> Link:
        import aiohttp

        session = aiohttp.ClientSession()
        try:
            ws = await session.ws_connect(
                self.url,
                headers={"Authorization": f"Bearer {self.token}"},
                max_msg_size=MAX_FRAME,
                autoping=True,
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            await session.close()
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise LinkError(f"cannot reach {self.url}: {reason}") from None
        return WsLink(session, ws)


def read_token(token_file: str | None, environ: dict[str, str], default_file: Path | None) -> str | None:
    """Return the WebSocket token: ``--token-file``, ``HERMES_TUI_TOKEN``, else the gateway's own file.

    :param default_file: ``<data dir>/tui-gateway.token``, which a gateway on this machine writes.
    :raises LinkError: the named token file cannot be read.
    """
    if token_file:
        try:
            return Path(token_file).expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise LinkError(f"cannot read the token file {token_file}: {exc.strerror}", fatal=True) from None
    token = environ.get("HERMES_TUI_TOKEN", "").strip()
    if token:
        return token
    if default_file is not None and default_file.is_file():
        try:
            return default_file.read_text(encoding="utf-8").strip() or None
        except OSError:
            return None
    return None


def data_dir() -> Path:
    """Return Hermes's data directory (``HERMES_HOME`` or the platform's user data dir)."""
    from hermes_cli.paths import resolve_paths

    return resolve_paths(os.environ).data_dir
