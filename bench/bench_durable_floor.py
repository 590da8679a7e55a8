"""A second floor under ``hermes api``: the bare relay plus the durable work every turn must do.

``bench_api_floor.py``'s relay copies bytes. ``hermes api`` cannot: the issues ask that a prompt
is stored before its first token is shown, that the reply is stored before the stream ends, that
every event goes into a durable per-session log, and that the stream is the server's own chat
chunks, not the upstream's bytes. This server does exactly that much and nothing else, in the
cheapest way we know on the same stack (aiohttp server and client, SQLite in WAL mode):

- the request's JSON is read and the upstream body built from it;
- a new session's row and its prompt row are stored by one transaction on a writer thread that
  commits everything queued in one go (group commit), while the upstream request is under way;
  the first frame waits for that commit;
- every upstream ``data:`` line is decoded and each text delta re-encoded as a chat chunk of
  our own, and kept as an event;
- while turns stream, a tick every 50 ms (stretched when more than 100 turns stream, at most
  0.5 s, as hermes's log writer does) stores each streaming turn's new events as an
  uncompressed provisional chunk, all in one job;
- at the end, the reply row and the turn's events (JSON, zlib), replacing its provisional
  chunks, are stored by one transaction, then the last chunk and ``[DONE]`` are written.

No agent loop, no leases, no titles, no chat index, no plugins. What it adds over the relay is
what any durable server on this stack pays; what ``hermes api`` adds over it is ours.
``bench_api_ratio.py --durable-floor`` runs it beside the relay. Not a test.

Run alone: ``.venv/bin/python bench/bench_durable_floor.py --serve PORT UPSTREAM_PORT``; other
benches start it with :func:`start_floor`.
"""

from __future__ import annotations

import asyncio
import json
import queue
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from hermes_core.event_log.writer_task import FLUSH_S, SLICE_S, flush_interval

PATH = "/v1/chat/completions"

SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, model TEXT, created_at REAL, updated_at REAL);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, position INTEGER NOT NULL,
    role TEXT NOT NULL, content TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE INDEX messages_by_session ON messages (session_id, position);
CREATE TABLE event_chunks (
    session_id TEXT NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, data BLOB NOT NULL
);
CREATE UNIQUE INDEX event_chunks_by_session ON event_chunks (session_id, last_seq);
"""

Statements = Sequence[tuple[str, tuple[Any, ...]]]


class Log:
    """One streaming turn's events and how many of them are stored in provisional chunks."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.events: list[dict[str, Any]] = []
        self.stored = 0

    def provisional(self) -> tuple[str, tuple[Any, ...]] | None:
        """The INSERT of the events not stored yet, or None."""
        if self.stored == len(self.events):
            return None
        first, self.stored = self.stored, len(self.events)
        data = zlib.compress(_dumps(self.events[first:]).encode(), 0)
        return (
            "INSERT INTO event_chunks VALUES (?, ?, ?, ?)",
            (self.session_id, first + 1, self.stored, data),
        )


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def tick(writer: Writer, streaming: set[Log]) -> None:
    """Store the streaming turns' new events every tick, in one job."""
    interval = FLUSH_S  # the provisional chunks' tick and pass slices are hermes's own
    while True:
        await asyncio.sleep(interval)
        inserts = []
        slice_end = time.perf_counter() + SLICE_S
        for log in list(streaming):
            if time.perf_counter() > slice_end:  # let the streams run, as hermes's writer does
                await asyncio.sleep(0)
                slice_end = time.perf_counter() + SLICE_S
            insert = log.provisional() if log in streaming else None  # not one that ended meanwhile
            if insert is not None:
                inserts.append(insert)
        if inserts:
            await writer.write(inserts)
        interval = flush_interval(len(inserts))


class Writer:
    """One SQLite connection on a thread of its own; every job queued meanwhile shares a commit."""

    def __init__(self, path: Path, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._jobs: queue.SimpleQueue[tuple[Statements, asyncio.Future[None]]] = queue.SimpleQueue()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(SCHEMA)
        threading.Thread(target=self._run, daemon=True).start()

    def write(self, statements: Statements) -> asyncio.Future[None]:
        done: asyncio.Future[None] = self._loop.create_future()
        self._jobs.put((statements, done))
        return done

    def _run(self) -> None:
        while True:
            batch = [self._jobs.get()]
            while True:
                try:
                    batch.append(self._jobs.get_nowait())
                except queue.Empty:
                    break
            self._conn.execute("BEGIN IMMEDIATE")
            for statements, _ in batch:
                for sql, params in statements:
                    self._conn.execute(sql, params)
            self._conn.execute("COMMIT")
            self._loop.call_soon_threadsafe(_settle, [done for _, done in batch])


def _settle(futures: list[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():
            future.set_result(None)


def _chunk(ident: str, created: int, model: str, delta: dict[str, Any], finish: str | None) -> str:
    body = {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return "data: " + _dumps(body) + "\n\n"


def run_server(port: int, upstream_port: int) -> None:
    """Serve the durable floor (in its own process) until terminated."""
    from aiohttp import ClientSession, TCPConnector, web

    upstream = f"http://127.0.0.1:{upstream_port}{PATH}"
    folder = Path(tempfile.mkdtemp(prefix="durable-floor-"))

    async def turn(request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        messages = body["messages"]
        model = str(body["model"]).split(":", 1)[-1]
        prompt = str(messages[-1]["content"])
        session_id = f"s{random.getrandbits(64):016x}"
        now = time.time()
        writer: Writer = request.app["writer"]
        stored = writer.write(
            [
                ("INSERT INTO sessions VALUES (?, ?, ?, ?)", (session_id, model, now, now)),
                ("INSERT INTO messages VALUES (NULL, ?, 0, 'user', ?, ?)", (session_id, prompt, now)),
            ]
        )
        out = json.dumps({"model": model, "messages": messages, "stream": True}).encode()
        session: ClientSession = request.app["client"]
        ident, created = f"chatcmpl-{random.getrandbits(96):024x}", int(now)
        log = Log(session_id)
        events = log.events
        events.append({"type": "TurnStarted", "ts": now})
        streaming: set[Log] = request.app["streaming"]
        streaming.add(log)
        texts: list[str] = []
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        async with session.post(upstream, data=out, headers={"Content-Type": "application/json"}) as up:
            await stored  # the prompt is durable before anything is shown
            events.append({"type": "Stored", "ts": time.time()})
            pending = b""
            async for data in up.content.iter_any():
                pending += data
                *lines, pending = pending.split(b"\n")
                frames: list[str] = []
                for line in lines:
                    if not line.startswith(b"data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == b"[DONE]":
                        continue
                    decoded = json.loads(payload)
                    choices = decoded.get("choices") or ()
                    text = choices[0].get("delta", {}).get("content") if choices else None
                    if text:
                        texts.append(text)
                        events.append({"type": "TextDelta", "ts": time.time(), "text": text})
                        if not frames and not response.prepared:
                            frames.append(_chunk(ident, created, model, {"role": "assistant"}, None))
                        frames.append(_chunk(ident, created, model, {"content": text}, None))
                if frames:
                    if not response.prepared:
                        await response.prepare(request)
                    await response.write("".join(frames).encode())
        streaming.discard(log)
        reply = "".join(texts)
        events.append({"type": "TurnCompleted", "ts": time.time(), "text": reply})
        compacted = zlib.compress(_dumps(events).encode(), 6)
        end = time.time()
        await writer.write(
            [
                ("INSERT INTO messages VALUES (NULL, ?, 1, 'assistant', ?, ?)", (session_id, reply, end)),
                ("DELETE FROM event_chunks WHERE session_id = ?", (session_id,)),
                ("INSERT INTO event_chunks VALUES (?, 1, ?, ?)", (session_id, len(events), compacted)),
                ("UPDATE sessions SET updated_at = ? WHERE id = ?", (end, session_id)),
            ]
        )
        if not response.prepared:
            await response.prepare(request)
        await response.write((_chunk(ident, created, model, {}, "stop") + "data: [DONE]\n\n").encode())
        await response.write_eof()
        return response

    async def context(app: web.Application) -> AsyncIterator[None]:
        app["client"] = ClientSession(connector=TCPConnector(limit=0))
        app["writer"] = Writer(folder / "floor.sqlite3", asyncio.get_running_loop())
        app["streaming"] = set()
        ticker = asyncio.ensure_future(tick(app["writer"], app["streaming"]))
        yield
        ticker.cancel()
        await app["client"].close()
        shutil.rmtree(folder, ignore_errors=True)

    app = web.Application()
    app.cleanup_ctx.append(context)
    app.router.add_post(PATH, turn)
    from bench_api_floor import serve

    serve(app, port)


def start_floor(upstream_port: int) -> tuple[subprocess.Popen[str], int]:
    """Start the durable floor in a process of its own, on a free port; return it and the port."""
    from bench_api import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port), str(upstream_port)], text=True)
    return proc, port


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        run_server(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(__doc__)
