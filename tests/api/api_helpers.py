"""Start a real ``hermes api`` subprocess and talk HTTP + SSE to it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from tests import wire_check

BIN_DIR = Path(sys.executable).parent
HERMES = shutil.which("hermes", path=str(BIN_DIR)) or str(BIN_DIR / "hermes")
_SCRUB = ("HERMES_", "OPENAI_", "OPENROUTER_", "ANTHROPIC_", "API_SERVER_")


def clean_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return an environment with ``HERMES_HOME=home`` and nothing Hermes-related inherited."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    env["HERMES_HOME"] = str(home)
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    env.update(extra or {})
    return env


@dataclass
class Server:
    """A running ``hermes api`` process."""

    home: Path
    proc: subprocess.Popen[str]
    port: int
    key: str
    log: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def auth(self, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key or self.key}"}

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        """Stop the server; fail when it logged a task exception nobody retrieved."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        dropped = [line for line in list(self.log) if "exception was never retrieved" in line]
        assert not dropped, "the server dropped a task exception:\n" + "".join(self.log)
        return self.proc.returncode


def write_config(home: Path, text: str) -> None:
    """Write ``config.toml`` into HERMES_HOME."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")


def start_server(
    home: Path,
    *args: str,
    config: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 20,
) -> Server:
    """Start ``hermes api --port 0`` and wait for its listening line."""
    if config is not None:
        write_config(home, config)
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [HERMES, "api", "--port", "0", *args],
        env=clean_env(home, env),
        cwd=str(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    port: int | None = None
    deadline = time.monotonic() + timeout
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if "listening on http://" in line:
            port = int(line.rsplit(":", 1)[1].split("/", 1)[0])
            break
    if port is None:
        proc.kill()
        raise AssertionError("server did not start:\n" + "".join(lines))
    stream = proc.stderr

    def drain() -> None:
        for rest in stream:
            lines.append(rest)

    threading.Thread(target=drain, daemon=True).start()
    time.sleep(0.05)
    key_file = home / "api_server.key"
    key = (env or {}).get("API_SERVER_KEY") or (key_file.read_text().strip() if key_file.exists() else "")
    return Server(home, proc, port, key, lines)


@dataclass
class Reply:
    """An HTTP response, read fully."""

    status: int
    headers: Mapping[str, str]
    text: str

    @property
    def json(self) -> Any:
        return json.loads(self.text)


async def call(
    server: Server,
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: Mapping[str, str] | None = None,
    auth: bool | str = True,
    data: bytes | None = None,
    timeout: float = 30,
) -> Reply:
    """Send one request and read the whole response."""
    h: dict[str, str] = {}
    if auth is True:
        h.update(server.auth())
    elif isinstance(auth, str):
        h["Authorization"] = auth
    h.update(headers or {})
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as client:
        kwargs: dict[str, Any] = {"headers": h}
        if body is not None:
            kwargs["data"] = json.dumps(body)
        if data is not None:
            kwargs["data"] = data
        async with client.request(method, server.base + path, **kwargs) as resp:
            reply = Reply(resp.status, resp.headers, await resp.text())
    wire_check.check_api(method, path, reply.status, reply.headers.get("Content-Type", ""), reply.text)
    return reply


def parse_sse(text: str) -> list[dict[str, Any]]:
    """Split an SSE body into frames: ``{event, id, data, comment, other}``."""
    frames: list[dict[str, Any]] = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        frame: dict[str, Any] = {}
        for line in block.split("\n"):
            if line.startswith(":"):
                frame["comment"] = line[1:].strip()
            elif line.startswith("event: "):
                frame["event"] = line[7:]
            elif line.startswith("id: "):
                frame["id"] = line[4:]
            elif line.startswith("data: "):
                raw = line[6:]
                frame["data"] = raw if raw == "[DONE]" else json.loads(raw)
            else:
                frame["other"] = line  # a line SSE parsers ignore (a field SSE does not define)
        frames.append(frame)
    return frames


def assert_error(reply: Reply, status: int, code: str) -> dict[str, Any]:
    """Assert the docs/reference/api-server.md#error-envelope envelope with this status and code; return the
    error object."""
    assert reply.status == status, (reply.status, reply.text)
    assert reply.headers["Content-Type"].startswith("application/json")
    err = reply.json["error"]
    assert set(err) >= {"message", "type", "param", "code"}
    assert err["code"] == code, err
    expected_type = (
        "rate_limit_error" if status == 429 else "server_error" if status >= 500 else "invalid_request_error"
    )
    assert err["type"] == expected_type
    assert reply.headers["X-Should-Retry"] == ("true" if status in (429, 503) else "false")
    return dict(err)
