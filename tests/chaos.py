"""Shared parts of the kill -9 chaos tests (TUI over stdio and WebSocket, ACP; SQLite and
PostgreSQL): a fake OpenAI upstream that stalls the first turn after three deltas, so the kill
lands mid-turn deterministically, and a kernel in the test process that reads the server's event
log from storage (docs/reference/core.md#after-a-crash).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from hermes_core import Kernel, LogGap
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import delta, openai_reply, usage
from tests.timing import eventually

KEY = "sk-chaos-0123456789abcdef"
PATH = "/v1/chat/completions"
FIRST = "first question, cut off by kill -9"
SECOND = "second question, after the restart"
DELTAS = ("alpha ", "beta ", "gamma ")
ANSWER = "second answer"


def config_text(url: str, storage: str = "") -> str:
    """Return a ``config.toml`` that talks to the fake upstream through the ``openai`` provider."""
    return (
        'model = "openai:gpt-chaos"\n[titles]\nrefine = false\n[agent]\nprovider_retries = 0\n'
        f'[providers.openai]\napi_key = "{KEY}"\nbase_url = "{url}/v1"\n{storage}'
    )


def postgres_storage(dsn: str) -> str:
    """Return the ``[storage]`` table for a PostgreSQL DSN."""
    return f'[storage]\nbackend = "postgres"\ndsn = {json.dumps(dsn)}\n'


def _user_texts(body: Any) -> list[str]:
    out = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        out.append(str(content))
    return out


class StallingUpstream:
    """The fake upstream: the first question gets three deltas and then nothing (until the test
    ends); any later question gets :data:`ANSWER`. Every request is checked."""

    def __init__(self, up: FakeUpstream, deltas: tuple[str, ...] = DELTAS) -> None:
        self.up = up
        self.deltas = deltas
        self.release = asyncio.Event()
        self.stalled = asyncio.Event()
        up.on("POST", PATH, self.handle)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = self.up.requests[-1].body
        assert request.headers.get("Authorization") == f"Bearer {KEY}"
        assert body["model"] == "gpt-chaos" and body["stream"] is True
        users = _user_texts(body)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        if users[-1] == FIRST:
            for text in self.deltas:
                await response.write(delta(content=text))
            self.stalled.set()
            await self.release.wait()  # the server is killed meanwhile; its connection is gone
            return response
        assert users[-1] == SECOND and FIRST in users, users
        for frame in [*openai_reply(ANSWER)[:-1], usage(20, 2), openai_reply(ANSWER)[-1]]:
            await response.write(frame)
        await response.write_eof()
        return response

    def asked(self) -> list[str]:
        """The last user text of every request the upstream received."""
        return [_user_texts(r.body)[-1] for r in self.up.requests if r.path == PATH]


@asynccontextmanager
async def stalling_upstream(deltas: tuple[str, ...] = DELTAS) -> AsyncIterator[StallingUpstream]:
    """Run the fake upstream for one test; the first question gets ``deltas`` (none: it stalls
    before the first token)."""
    async with FakeUpstream() as up:
        fake = StallingUpstream(up, deltas)
        try:
            yield fake
        finally:
            fake.release.set()


def kill9(proc: subprocess.Popen[Any]) -> None:
    """Kill the server process with SIGKILL (no clean-up of any kind) and reap it."""
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL


def reader_kernel(storage: dict[str, Any]) -> Kernel:
    """A kernel in the test process on the server's storage, to read its event log."""
    return Kernel.create(
        entry_points=["mock", "sqlite", "postgres"],
        strict=True,
        settings={"model": "mock:echo", "storage": storage, "titles": {"refine": False}},
    )


def sqlite_storage(home: Path) -> dict[str, Any]:
    """The storage settings of a server whose ``HERMES_HOME`` is ``home``."""
    return {"backend": "sqlite", "path": str(home / "hermes.sqlite3")}


async def stored_end(kernel: Kernel, session_id: str) -> int:
    """The newest number a (dead) server stored in a session's log."""
    page = await kernel.events.read(session_id, after=0, limit=1)
    return page.durable


async def whole_log(kernel: Kernel, session_id: str) -> list[Any]:
    """Every item of a session's log (events and gaps), read from storage."""
    items: list[Any] = []
    after = 0
    while True:
        page = await kernel.events.read(session_id, after=after, limit=10_000)
        items.extend(page.items)
        if not page.more or not page.items:
            return items
        after = page.last_seq


async def stored_until_terminal(kernel: Kernel, session_id: str) -> list[Any]:
    """The whole stored log once the terminal event the restarted server appends is stored."""

    async def read() -> list[Any]:
        items = await whole_log(kernel, session_id)
        return items if any(type(i).__name__ == "TurnCompleted" for i in items) else []

    return await eventually(read, timeout=20, interval=0.02, what="the terminal event to be stored")


def gaps(items: list[Any]) -> list[LogGap]:
    """The gaps among log items."""
    return [i for i in items if isinstance(i, LogGap)]


def kill9_async_pid(pid: int) -> None:
    """Kill a process started with asyncio (reaped by its owner) with SIGKILL."""
    os.kill(pid, signal.SIGKILL)
