"""A small test client for ``hermes tui``: a real subprocess over real stdio, or a real WebSocket.

:class:`TuiProcess` spawns the gateway, reads frames on a thread, matches responses by id and
keeps every event in arrival order. :class:`WsClient` does the same over aiohttp's client.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests import wire_check

BIN_DIR = Path(sys.executable).parent
HERMES = shutil.which("hermes", path=str(BIN_DIR)) or str(BIN_DIR / "hermes")
_SCRUB = ("HERMES_", "OPENAI_", "OPENROUTER_", "ANTHROPIC_")

Frame = dict[str, Any]


class RpcFailure(Exception):
    """An error response: ``code``, ``message`` and ``data`` as received."""

    def __init__(self, error: Mapping[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code: Any = error.get("code")
        self.message: Any = error.get("message")
        self.data: Any = error.get("data")


def hermes_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return an environment with ``HERMES_HOME=home`` and nothing Hermes-related inherited."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    env.pop("PYTHONPATH", None)
    env["HERMES_HOME"] = str(home)
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    env.update(extra or {})
    return env


def write_config(home: Path, text: str = 'model = "mock:echo"\n') -> Path:
    """Write ``config.toml`` into ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


class _Collector:
    """Frames in arrival order, responses by id, and waiting on both."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.frames: list[Frame] = []
        self.responses: dict[Any, Frame] = {}
        self.null_errors: list[Frame] = []
        #: request id -> method, so a result is checked against its method's result schema
        self.methods: dict[Any, str] = {}

    def add(self, frame: Frame) -> None:
        wire_check.check_tui(frame, self.methods.get(frame.get("id")) if "method" not in frame else None)
        with self.cond:
            self.frames.append(frame)
            if "method" not in frame:
                if frame.get("id") is None:
                    self.null_errors.append(frame)
                else:
                    self.responses[frame["id"]] = frame
            self.cond.notify_all()

    def wait(self, predicate: Callable[[], Any], timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("condition not met in time")
                self.cond.wait(left)

    def events(self, session_id: str | None = None, type_: str | None = None, start: int = 0) -> list[Frame]:
        """Return event params, optionally of one session and one type."""
        with self.cond:
            out = []
            for frame in self.frames[start:]:
                if frame.get("method") != "event":
                    continue
                params = frame["params"]
                if session_id is not None and params.get("session_id") != session_id:
                    continue
                if type_ is not None and params.get("type") != type_:
                    continue
                out.append(params)
            return out


class TuiProcess:
    """``hermes tui`` as a subprocess.

    :param home: the ``HERMES_HOME`` to use.
    :param args: extra CLI arguments after ``tui``.
    :param env: extra environment variables.
    """

    def __init__(
        self,
        home: Path,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        global_args: Sequence[str] = (),
    ) -> None:
        self.home = home
        self.stderr_path = home / f"tui-stderr-{time.monotonic_ns()}.log"
        self._stderr = self.stderr_path.open("wb")
        self.proc = subprocess.Popen(
            [HERMES, *global_args, "tui", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=hermes_env(home, env),
            cwd=str(cwd or home),
        )
        self.col = _Collector()
        self.raw_lines: list[bytes] = []
        self._ids = itertools.count(1000)
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                self.raw_lines.append(line)
                try:
                    frame = json.loads(line)
                except ValueError:
                    frame = {"unparsable": line.decode("utf-8", "replace")}
                self.col.add(frame)
        except (ValueError, OSError):
            pass  # the test closed our end of stdout on purpose

    # -- sending ---------------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        """Write bytes to the gateway's stdin as they are."""
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, frame: Mapping[str, Any]) -> None:
        """Write one frame (compact JSON plus newline)."""
        self.send_raw(json.dumps(frame, ensure_ascii=False).encode("utf-8") + b"\n")

    def start(self, method: str, params: Mapping[str, Any] | None = None, **kw: Any) -> int:
        """Send a request and return its id without waiting."""
        request_id = next(self._ids)
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        merged = dict(params or {}, **kw)
        frame["params"] = merged
        self.col.methods[request_id] = method
        self.send(frame)
        return request_id

    def response(self, request_id: Any, timeout: float = 10) -> Frame:
        """Wait for the response with this id."""
        result: Frame = self.col.wait(lambda: self.col.responses.get(request_id), timeout)
        return result

    def call(
        self, method: str, params: Mapping[str, Any] | None = None, timeout: float = 10, **kw: Any
    ) -> Any:
        """Send a request and return its result; raise :class:`RpcFailure` on an error."""
        frame = self.response(self.start(method, params, **kw), timeout)
        if "error" in frame:
            raise RpcFailure(frame["error"])
        return frame["result"]

    def error(
        self, method: str, params: Mapping[str, Any] | None = None, timeout: float = 10, **kw: Any
    ) -> RpcFailure:
        """Send a request that must fail and return the failure."""
        try:
            self.call(method, params, timeout, **kw)
        except RpcFailure as exc:
            return exc
        raise AssertionError(f"{method} succeeded but an error was expected")

    # -- events ----------------------------------------------------------------------------------
    def events(self, session_id: str | None = None, type_: str | None = None) -> list[Frame]:
        """Return the event params seen so far."""
        return self.col.events(session_id, type_)

    def wait_event(
        self,
        session_id: str | None,
        type_: str,
        timeout: float = 10,
        count: int = 1,
        where: Callable[[Frame], bool] | None = None,
    ) -> Frame:
        """Wait until ``count`` events of this type exist (optionally matching ``where``); return the last."""

        def found() -> Frame | None:
            items = [e for e in self.col.events(session_id, type_) if where is None or where(e)]
            return items[count - 1] if len(items) >= count else None

        result: Frame = self.col.wait(found, timeout)
        return result

    def wait_complete(self, session_id: str, count: int = 1, timeout: float = 15) -> Frame:
        """Wait for the ``count``-th ``message.complete`` of a session and return its payload."""
        payload: Frame = self.wait_event(session_id, "message.complete", timeout, count)["payload"]
        return payload

    def wait_idle(self, session_id: str, timeout: float = 15) -> None:
        """Wait until the session reports ``running:false`` after its last completion."""

        def idle() -> bool:
            events = self.col.events(session_id)
            last_complete = max(
                (i for i, e in enumerate(events) if e["type"] == "message.complete"), default=-1
            )
            return (
                any(
                    e["type"] == "session.info" and not e["payload"]["running"]
                    for e in events[last_complete + 1 :]
                )
                and last_complete >= 0
            )

        self.col.wait(idle, timeout)

    def create(self, **params: Any) -> str:
        """Create a session and return its id."""
        sid: str = self.call("session.create", params)["session_id"]
        return sid

    def turn(self, session_id: str, text: str, timeout: float = 15) -> Frame:
        """Submit a prompt and wait for its completion payload."""
        before = len(self.events(session_id, "message.complete"))
        self.call("prompt.submit", session_id=session_id, text=text)
        done = self.wait_complete(session_id, before + 1, timeout)
        self.wait_idle(session_id, timeout)
        return done

    def stderr_text(self) -> str:
        """Return what the gateway wrote to stderr so far."""
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.proc.poll() is None

    def close(self, timeout: float = 10) -> int:
        """Close stdin and wait for the exit code."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(5)
        self._stderr.close()
        return code

    def __enter__(self) -> TuiProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WsClient:
    """One WebSocket connection to ``hermes tui --ws`` (aiohttp client)."""

    def __init__(self, ws: Any, session: Any) -> None:
        self.ws = ws
        self._session = session
        self.frames: list[Frame] = []
        self.responses: dict[Any, Frame] = {}
        self.changed = asyncio.Event()
        self._ids = itertools.count(1000)
        self.closed_code: int | None = None
        self.methods: dict[Any, str] = {}
        self._task = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, url: str, **kw: Any) -> WsClient:
        """Open a connection; ``kw`` go to ``ClientSession.ws_connect``."""
        import aiohttp

        session = aiohttp.ClientSession()
        try:
            ws = await session.ws_connect(url, **kw)
        except BaseException:
            await session.close()
            raise
        return cls(ws, session)

    async def _read(self) -> None:
        import aiohttp

        async for msg in self.ws:
            if msg.type == aiohttp.WSMsgType.TEXT:
                frame = json.loads(msg.data)
                wire_check.check_tui(
                    frame, self.methods.get(frame.get("id")) if "method" not in frame else None
                )
                self.frames.append(frame)
                if "method" not in frame and frame.get("id") is not None:
                    self.responses[frame["id"]] = frame
                self.changed.set()
        self.closed_code = self.ws.close_code
        self.changed.set()

    async def wait(self, predicate: Callable[[], Any], timeout: float = 10) -> Any:
        """Wait until ``predicate()`` is truthy."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("condition not met in time")
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except TimeoutError:
                pass

    async def send(self, frame: Mapping[str, Any]) -> None:
        """Send one text frame."""
        await self.ws.send_str(json.dumps(frame))

    async def call(self, method: str, params: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        """Send a request; return its result or raise :class:`RpcFailure`."""
        request_id = next(self._ids)
        self.methods[request_id] = method
        await self.send(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params or {}, **kw)}
        )
        frame: Frame = await self.wait(lambda: self.responses.get(request_id))
        if "error" in frame:
            raise RpcFailure(frame["error"])
        return frame["result"]

    def events(self, session_id: str | None = None, type_: str | None = None) -> list[Frame]:
        """Return the event params seen so far."""
        out = []
        for frame in self.frames:
            if frame.get("method") != "event":
                continue
            params = frame["params"]
            if session_id is not None and params.get("session_id") != session_id:
                continue
            if type_ is not None and params.get("type") != type_:
                continue
            out.append(params)
        return out

    async def wait_closed(self, timeout: float = 10) -> int | None:
        """Wait for the server to close the socket and return the close code."""
        await asyncio.wait_for(asyncio.shield(self._task), timeout)
        return self.closed_code

    async def close(self) -> None:
        """Close the socket and the client session."""
        await self.ws.close()
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self._session.close()


class WsServer:
    """``hermes tui --ws 127.0.0.1:0`` as a subprocess; ``url`` is read from its stderr line."""

    def __init__(
        self,
        home: Path,
        token: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        bind: str = "127.0.0.1:0",
    ) -> None:
        self.home = home
        self.token = token
        extra = {"HERMES_TUI_TOKEN": token, **(env or {})}
        self.proc = subprocess.Popen(
            [HERMES, "tui", "--ws", bind, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=hermes_env(home, extra),
            cwd=str(home),
        )
        self.url = ""
        self.stderr_lines: list[str] = []
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace")
                self.stderr_lines.append(line)
                if "listening on ws://" in line:
                    self.url = line.split("listening on ", 1)[1].strip()
                    ready.set()
            ready.set()

        self._stderr_reader = threading.Thread(target=read, daemon=True)
        self._stderr_reader.start()
        if not ready.wait(20) or not self.url:
            self.stop()
            raise RuntimeError("ws server did not start: " + "".join(self.stderr_lines))

    def stop(self) -> int:
        """Send SIGTERM and wait."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            code = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._stderr_reader.join(10)  # every stderr line is in stderr_lines from here on
        return code
