"""Benchmarks of ``hermes tui`` over stdio against the budgets of the TUI-gateway issue; prints a table.

Conditions: a fresh ``HERMES_HOME`` configured with ``mock:echo``, the real ``hermes`` console
script, plain pipes, delta coalescing on, in-memory storage, auto-compaction and title
refinement off (see ``CONFIG``). Run: ``.venv/bin/python bench/bench_tui.py``.

* events/s: provider deltas delivered per second for a ``[[tokens 20000]]`` turn, from the
  ``prompt.submit`` write to the ``message.complete`` read (a coalesced frame counts its deltas).
* control round trip: ``session.status`` sent one at a time while such turns stream.
* interrupt: ``session.interrupt`` written → ``message.complete`` read, while streaming.

``--upstream openai`` runs the same measurements against a fake OpenAI-compatible server on
loopback through the ``openai`` provider instead of the ``mock`` provider.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERMES = str(Path(sys.executable).with_name("hermes"))
# Auto-compaction and title refinement are off: with the mock's 32k window every 20k-token turn
# would otherwise be preceded by a summarising model call, which is not what is measured here.
CONFIG = """model = "mock:echo"
[storage]
backend = "memory"
[compression]
auto_threshold = 0
[titles]
refine = false
"""


class Gateway:
    """A ``hermes tui`` process; a reader thread records each frame with its arrival time."""

    def __init__(self, home: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
        env["HERMES_HOME"] = str(home)
        self.proc = subprocess.Popen(
            [HERMES, "tui"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=str(home),
        )
        self.cond = threading.Condition()
        self.responses: dict[int, tuple[float, dict[str, Any]]] = {}
        self.completes: list[tuple[float, dict[str, Any]]] = []
        self.deltas = 0
        self.first_delta: float | None = None
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            now = time.perf_counter()
            frame = json.loads(line)
            with self.cond:
                if "id" in frame and frame.get("id") is not None:
                    self.responses[frame["id"]] = (now, frame)
                elif frame.get("method") == "event":
                    params = frame["params"]
                    kind = params["type"]
                    if kind == "message.delta":
                        self.deltas += len(params["payload"]["text"].split())
                        if self.first_delta is None:
                            self.first_delta = now
                    elif kind == "message.complete":
                        self.completes.append((now, params["payload"]))
                self.cond.notify_all()

    def send(self, method: str, **params: Any) -> tuple[int, float]:
        self.next_id += 1
        data = (
            json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode()
            + b"\n"
        )
        assert self.proc.stdin is not None
        sent = time.perf_counter()
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        return self.next_id, sent

    def wait(self, predicate: Any, timeout: float = 60) -> Any:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not (value := predicate()):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("benchmark condition not met")
                self.cond.wait(left)
            return value

    def call(self, method: str, **params: Any) -> tuple[float, dict[str, Any]]:
        request_id, sent = self.send(method, **params)
        got, frame = self.wait(lambda: self.responses.get(request_id))
        return got - sent, frame

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(20)


def wait_idle(gw: Gateway, sid: str) -> None:
    """Poll ``session.status`` until the session is idle."""
    while gw.call("session.status", session_id=sid)[1]["result"]["running"]:
        time.sleep(0.002)


def wait_complete(gw: Gateway, done_before: int) -> tuple[float, dict[str, Any]]:
    """Wait for the next ``message.complete`` after ``done_before`` of them."""
    found: tuple[float, dict[str, Any]] = gw.wait(
        lambda: gw.completes[done_before] if len(gw.completes) > done_before else None
    )
    return found


def fresh(gw: Gateway) -> str:
    """Create a session (each measured turn gets one, so history size stays constant)."""
    _, created = gw.call("session.create")
    sid: str = created["result"]["session_id"]
    return sid


def throughput(gw: Gateway, tokens: int) -> float:
    """Return deltas per second for one ``[[tokens N]]`` turn."""
    sid = fresh(gw)
    with gw.cond:
        gw.deltas = 0
        done_before = len(gw.completes)
    _, sent = gw.send("prompt.submit", session_id=sid, text=f"[[tokens {tokens}]]")
    finished, payload = wait_complete(gw, done_before)
    assert gw.deltas == tokens, (gw.deltas, tokens)
    assert payload["status"] == "complete"
    wait_idle(gw, sid)
    return tokens / (finished - sent)


def control_rtts(gw: Gateway, tokens: int, turns: int) -> list[float]:
    """Return session.status round trips (seconds) sampled while turns stream."""
    samples: list[float] = []
    for _ in range(turns):
        sid = fresh(gw)
        with gw.cond:
            done_before = len(gw.completes)
        gw.send("prompt.submit", session_id=sid, text=f"[[tokens {tokens}]]")
        while True:
            rtt, frame = gw.call("session.status", session_id=sid)
            with gw.cond:
                finished = len(gw.completes) > done_before
            if finished:
                break
            if frame["result"]["running"]:
                samples.append(rtt)
        wait_idle(gw, sid)
    return samples


def interrupt_latency(gw: Gateway, rounds: int) -> list[float]:
    """Return interrupt → message.complete latencies (seconds) while a long turn streams."""
    out: list[float] = []
    for _ in range(rounds):
        sid = fresh(gw)
        with gw.cond:
            gw.first_delta = None
            done_before = len(gw.completes)
        gw.send("prompt.submit", session_id=sid, text="[[tokens 100000]]")
        gw.wait(lambda: gw.first_delta)
        _, sent = gw.send("session.interrupt", session_id=sid)
        finished, payload = wait_complete(gw, done_before)
        assert payload["status"] == "interrupted", payload["status"]
        out.append(finished - sent)
        wait_idle(gw, sid)
    return out


async def _serve_fake_openai() -> None:
    """Serve an OpenAI-compatible upstream on loopback streaming ``t0 t1 …``; print the port."""
    import asyncio

    from aiohttp import web

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        last = str(body["messages"][-1].get("content") or "")
        count = int(last.split("[[tokens ", 1)[1].split("]]", 1)[0]) if "[[tokens " in last else 5
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        head = '{"id":"c1","object":"chat.completion.chunk","model":"fake","choices":[{"index":0,"delta":'
        batch: list[bytes] = []
        try:
            for i in range(count):
                text = f"t{i}" if i == 0 else f" t{i}"
                batch.append(f'data: {head}{{"content":"{text}"}},"finish_reason":null}}]}}\n\n'.encode())
                if len(batch) == 64:
                    await resp.write(b"".join(batch))
                    batch.clear()
            batch.append(f'data: {head}{{}},"finish_reason":"stop"}}]}}\n\n'.encode())
            batch.append(b"data: [DONE]\n\n")
            await resp.write(b"".join(batch))
            await resp.write_eof()
        except ConnectionError:
            pass  # the gateway interrupted the turn and hung up
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(port, flush=True)
    await asyncio.Event().wait()


class FakeOpenAI:
    """The fake upstream in its own process, so it shares no GIL with the measuring client."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve-fake-upstream"], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--upstream", choices=("mock", "openai"), default="mock")
    parser.add_argument("--serve-fake-upstream", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fake_upstream:
        import asyncio

        asyncio.run(_serve_fake_openai())
        return 0
    fake: FakeOpenAI | None = None
    # The reader thread parses frames while the main thread times requests; a short GIL switch
    # interval keeps the measuring client from adding its own hand-off delays.
    sys.setswitchinterval(0.0005)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        config = CONFIG
        if args.upstream == "openai":
            fake = FakeOpenAI()
            config = config.replace('model = "mock:echo"', 'model = "openai:fake-model"')
            config += (
                f'[providers.openai]\nbase_url = "http://127.0.0.1:{fake.port}/v1"\napi_key = "sk-bench"\n'
            )
        (home / "config.toml").write_text(config)
        gw = Gateway(home)
        try:
            throughput(gw, 2000)  # warm-up
            rates = [throughput(gw, args.tokens) for _ in range(args.runs)]
            rtts = control_rtts(gw, args.tokens, args.runs * 2)
            interrupts = interrupt_latency(gw, 20)
        finally:
            gw.close()
            if fake is not None:
                fake.close()
    rows = [
        (
            f"events/s over stdio, [[tokens {args.tokens}]] (median of {len(rates)})",
            f"{statistics.median(rates):,.0f}",
            ">= 20,000",
        ),
        (f"control round trip while streaming, p50 (n={len(rtts)})", f"{pct(rtts, 0.5) * 1000:.2f} ms", ""),
        ("control round trip while streaming, p99", f"{pct(rtts, 0.99) * 1000:.2f} ms", "<= 20 ms"),
        (
            f"interrupt -> message.complete, p50 (n={len(interrupts)})",
            f"{pct(interrupts, 0.5) * 1000:.2f} ms",
            "",
        ),
        ("interrupt -> message.complete, max", f"{max(interrupts) * 1000:.2f} ms", "<= 50 ms"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"upstream: {args.upstream}")
    print(f"{'metric'.ljust(width)}  {'measured':>12}  budget")
    for name, value, budget in rows:
        print(f"{name.ljust(width)}  {value:>12}  {budget}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
