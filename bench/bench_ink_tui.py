"""Upstream's Ink TUI on ``hermes tui``: start-up and keystroke echo against the budgets of issue 21.

Conditions: the real bundle (``hermes_cli/tui_dist/entry.js`` from the ``hermes-agent`` 0.19.0
wheel, fetched into ``.ci/ink-tui`` like the tests do), a 120x45 tmux terminal, a fresh
``HERMES_HOME`` with ``mock:echo`` and SQLite storage. Times are taken from outside, the way a
user sees them: ``tmux capture-pane`` is polled (a poll costs a few milliseconds, which every
figure includes). Run: ``.venv/bin/python bench/bench_ink_tui.py [--runs N] [--upstream-venv DIR]
[--only start|echo]``.

* ``hermes --tui`` → ready: from starting ``hermes --tui`` to the prompt with a live session
  (session panel and "ready" in the status bar).
* ``hermes --tui`` → first reply: from the start to the reply of a prompt typed the moment it
  is ready ("first prompt accepted").
* upstream ``hermes --tui`` → ready: the same for upstream's own ``hermes --tui`` from its own
  venv (``--upstream-venv``, default ``.ci/ink-tui/.venv-upstream``: ``python -m venv`` there and
  ``pip install hermes-agent==0.19.0``; never this project's venv). It is given a dummy
  OpenRouter key so it creates a session instead of asking for setup; no prompt is sent to it.
* keystroke echo: one character typed at a time while a ``[[tokens 20000]]`` reply streams;
  from ``send-keys`` to the character showing in the input line. Each run types ``--chars``
  characters into its own reply; the percentiles are over all runs' keystrokes together (one
  run's p95 rests on two or three keystrokes). The ``message.delta`` frames the gateway sent for
  the reply are counted too (the TUI redraws its live tail for each).
* upstream's echo (``--upstream-echo``): the same keystrokes on upstream's own ``hermes --tui``
  and gateway, its model a fake OpenAI-compatible endpoint on loopback streaming the same 20,000
  tokens a millisecond apart. Upstream's stdio gateway writes one ``message.delta`` per model
  delta; this puts the budget in context.

``--no-prestart`` starts ours with ``HERMES_INK_PRESTART=0`` (the gateway loads only once Node
has, as before); ``--stream-interval-long 0.033`` gives the fixed 33 ms delta window of before.
Every figure depends on the load: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.tui.client import write_config  # noqa: E402
from tests.tui.ink import bundle  # noqa: E402
from tests.tui.ink.screen import InkTui  # noqa: E402

BUDGET_START_S = 1.5
BUDGET_ECHO_P95_MS = 100.0
START_ENV: dict[str, str] = {}
CONFIG = 'model = "mock:echo"\n[compression]\nauto_threshold = 0\n[titles]\nrefine = false\n'


def _ready(screen: str) -> bool:
    return "Session:" in screen and "─ ready" in screen


def _poll(tui: InkTui, check, limit: float) -> float:
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        if check(tui.text()):
            return time.perf_counter()
        time.sleep(0.005)
    raise TimeoutError("the TUI did not get there in time:\n" + tui.text())


def ours_start(root: Path) -> tuple[float, float]:
    """Return (seconds to ready, seconds to the first reply) for ``hermes --tui``."""
    home, work = root / "home", root / "work"
    work.mkdir(parents=True)
    write_config(home, CONFIG)
    # Warm the launcher and bytecode once, as an installed copy would be.
    tui = InkTui(home, work, via_hermes=True, env=START_ENV)
    try:
        _poll(tui, _ready, 60)
    finally:
        tui.close()
        tui.remove()
    start = time.perf_counter()
    tui = InkTui(home, work, via_hermes=True, env=START_ENV)
    try:
        ready = _poll(tui, _ready, 60) - start
        tui.type("hi")
        # Enter in the same read as the text is taken for pasted text, so wait for the echo.
        _poll(tui, lambda _s: tui.composer() == "hi", 10)
        tui.keys("Enter")
        reply = _poll(tui, lambda s: "You said: hi" in s, 60) - start
        return ready, reply
    finally:
        tui.close()
        tui.remove()


class _Upstream:
    """Upstream's own ``hermes --tui`` in tmux (its own venv and home)."""

    def __init__(self, hermes: Path, root: Path, config_yaml: str | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="ink-up-", dir="/tmp"))
        self.socket = self.dir / "s"
        home = root / "up-home"
        work = root / "up-work"
        home.mkdir(parents=True, exist_ok=True)
        work.mkdir(parents=True, exist_ok=True)
        if config_yaml is not None:
            (home / "config.yaml").write_text(config_yaml, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "OPENROUTER_"))}
        env.pop("PYTHONPATH", None)
        env.update(HERMES_HOME=str(home), OPENROUTER_API_KEY="sk-or-dummy-bench", TERM="xterm-256color")
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items()))
        script = self.dir / "run.sh"
        run = f"cd {shlex.quote(str(work))}\nexec {shlex.quote(str(hermes))} --tui 2>/dev/null\n"
        script.write_text(f"#!/bin/sh\n{exports}{run}", encoding="utf-8")
        script.chmod(0o700)
        self.start = time.perf_counter()
        self._tmux("-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "45", str(script))

    def _tmux(self, *args: str) -> str:
        return subprocess.run(
            [bundle.tmux(), "-S", str(self.socket), *args], capture_output=True, text=True, timeout=30
        ).stdout

    def text(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "0")

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "0", "-l", text)

    def keys(self, *names: str) -> None:
        self._tmux("send-keys", "-t", "0", *names)

    def composer(self) -> str:
        for line in reversed(self.text().splitlines()):
            stripped = line.strip()
            if stripped.startswith("❯"):
                return stripped[1:].strip()
        return ""

    def close(self) -> None:
        panes = self._tmux("list-panes", "-a", "-F", "#{pane_pid}").split()
        self._tmux("kill-server")
        for pid in panes:
            for _ in range(200):
                try:
                    os.kill(int(pid), 0)
                except OSError:
                    break
                time.sleep(0.05)
        shutil.rmtree(self.dir, ignore_errors=True)


def upstream_start(hermes: Path, root: Path) -> float:
    """Return seconds from upstream's ``hermes --tui`` to its ready prompt with a session."""
    warm = _Upstream(hermes, root)
    try:
        _poll(warm, _ready, 120)  # type: ignore[arg-type]
    finally:
        warm.close()
    tui = _Upstream(hermes, root)
    try:
        return _poll(tui, _ready, 120) - tui.start  # type: ignore[arg-type]
    finally:
        tui.close()


def _fake_openai(tokens: int) -> tuple[str, Callable[[], None]]:
    """Serve an OpenAI-compatible chat endpoint on loopback (in a thread) whose streamed reply is
    ``t0 t1 … t(N-1)``, one token a millisecond, like ``[[tokens N]] [[delay 1]]`` of the mock;
    return its base URL and a function that stops it."""
    import asyncio
    import json
    import threading

    from aiohttp import web

    def chunk(delta: dict[str, str], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "fake",
            "choices": [choice],
        }
        return f"data: {json.dumps(body)}\n\n".encode()

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("stream"):
            message = {"role": "assistant", "content": "title"}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return web.json_response({"id": "c", "object": "chat.completion", "choices": [choice]})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            await resp.write(chunk({"role": "assistant", "content": ""}))
            for i in range(tokens):
                await resp.write(chunk({"content": f"t{i}" + (" " if i < tokens - 1 else "")}))
                await asyncio.sleep(0.001)
            await resp.write(chunk({}, "stop") + b"data: [DONE]\n\n")
        except (ConnectionError, RuntimeError):
            pass  # the TUI was closed while the reply streamed
        return resp

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake", "object": "model"}]})

    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app)

    async def start() -> int:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return int(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]

    threading.Thread(target=loop.run_forever, daemon=True).start()
    port = asyncio.run_coroutine_threadsafe(start(), loop).result(30)

    def stop() -> None:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)

    return f"http://127.0.0.1:{port}/v1", stop


def upstream_echo(hermes: Path, root: Path, count: int) -> tuple[list[float], bool]:
    """Upstream's own ``hermes --tui`` and gateway, its model a fake OpenAI-compatible endpoint
    streaming 20,000 tokens: the same keystroke echo measurement as :func:`echo_latencies`."""
    url, stop = _fake_openai(20000)
    config = f"model:\n  provider: custom\n  base_url: {url}\n  default: fake\n  api_key: sk-fake\n"
    tui = _Upstream(hermes, root, config)
    try:
        _poll(tui, _ready, 120)  # type: ignore[arg-type]
        tui.type("go")
        _poll(tui, lambda _s: tui.composer() == "go", 10)  # type: ignore[arg-type]
        time.sleep(0.2)  # the input hands typed text on after a short timer (see InkTui.submit)
        tui.keys("Enter")
        _poll(tui, lambda s: " t200 " in s, 120)  # type: ignore[arg-type]
        out = []
        typed = ""
        for i in range(count):
            typed += "abcdefghijklmnopqrstuvwxyz"[i % 26]
            sent = time.perf_counter()
            tui.type(typed[-1])
            _poll(tui, lambda _s, want=typed: tui.composer().endswith(want), 60)  # type: ignore[arg-type]
            out.append((time.perf_counter() - sent) * 1000)
        return out, "─ ready" not in tui.text()
    finally:
        tui.close()
        stop()


def echo_latencies(root: Path, streaming: bool, count: int = 40) -> tuple[list[float], bool, int]:
    """Type ``count`` characters one at a time; return the echo latencies (ms), whether the
    reply was still streaming after the last one and how many ``message.delta`` frames it took."""
    home, work = root / "home", root / "work"
    work.mkdir(parents=True, exist_ok=True)
    write_config(home, CONFIG)
    tui = InkTui(home, work)
    try:
        _poll(tui, _ready, 60)
        if streaming:
            tui.type("go [[tokens 20000]] [[delay 1]]")
            _poll(tui, lambda _s: tui.composer().endswith("[[delay 1]]"), 10)
            tui.keys("Enter")
            _poll(tui, lambda s: " t200 " in s, 60)
        typed = ""
        out = []
        for i in range(count):
            char = "abcdefghijklmnopqrstuvwxyz"[i % 26]
            typed += char
            sent = time.perf_counter()
            tui.type(char)
            _poll(tui, lambda _s, want=typed: tui.composer().endswith(want), 10)
            out.append((time.perf_counter() - sent) * 1000)
        still = "─ ready" not in tui.text() if streaming else True
        if streaming:
            _poll(tui, lambda s: "─ ready" in s, 300)
        return out, still, len(tui.recording.events("message.delta"))
    finally:
        tui.close()
        tui.remove()


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} / {_p95(values):.2f} / {max(values):.2f} s"


def _start_rows(root: Path, runs: int, upstream_venv: Path) -> list[tuple[str, str, str]]:
    starts = [ours_start(root / f"ours{i}") for i in range(runs)]
    rows = [
        (
            "hermes --tui → ready (median / p95 / max)",
            _spread([r for r, _ in starts]),
            f"≤ {BUDGET_START_S} s",
        ),
        (
            "hermes --tui → first reply (median / p95 / max)",
            _spread([r for _, r in starts]),
            f"≤ {BUDGET_START_S} s",
        ),
    ]
    upstream = upstream_venv / "bin" / "hermes"
    if upstream.exists():
        theirs = [upstream_start(upstream, root / f"up{i}") for i in range(runs)]
        rows.append(("upstream hermes --tui → ready (median / p95 / max)", _spread(theirs), "ours ≤ this"))
    else:
        rows.append(("upstream hermes --tui → ready", f"not measured: no {upstream}", "ours ≤ this"))
    return rows


def _upstream_echo_rows(root: Path, runs: int, chars: int, upstream_venv: Path) -> list[tuple[str, str, str]]:
    upstream = upstream_venv / "bin" / "hermes"
    if not upstream.exists():
        return [("upstream keystroke echo", f"not measured: no {upstream}", "—")]
    busy: list[float] = []
    ended = 0
    for i in range(runs):
        one, still = upstream_echo(upstream, root / f"up-echo{i}", chars)
        busy += one
        ended += not still
    return [
        (
            f"upstream's own TUI + gateway, same echo, {runs}x{chars} keys (p50 / p95 / max)",
            f"{statistics.median(busy):.0f} / {_p95(busy):.0f} / {max(busy):.0f} ms"
            + (f" ({ended} replies ended early)" if ended else ""),
            "context",
        )
    ]


def _echo_rows(root: Path, runs: int, chars: int) -> list[tuple[str, str, str]]:
    idle, _, _ = echo_latencies(root / "idle", streaming=False, count=chars)
    busy: list[float] = []
    ended = 0
    frames = []
    per_run = []
    for i in range(runs):
        one, still, deltas = echo_latencies(root / f"busy{i}", streaming=True, count=chars)
        busy += one
        ended += not still
        frames.append(deltas)
        per_run.append(f"{_p95(one):.0f}")
    return [
        ("keystroke echo, idle (p50 / p95)", f"{statistics.median(idle):.0f} / {_p95(idle):.0f} ms", "—"),
        (
            f"keystroke echo, 20k-token reply streaming, {runs}x{chars} keys (p50 / p95 / max)",
            f"{statistics.median(busy):.0f} / {_p95(busy):.0f} / {max(busy):.0f} ms"
            + (f" ({ended} replies ended early)" if ended else ""),
            f"p95 ≤ {BUDGET_ECHO_P95_MS:.0f} ms",
        ),
        ("  p95 of each run", " / ".join(per_run) + " ms", "—"),
        ("  message.delta frames per 20k-token reply", " / ".join(map(str, frames)), "—"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chars", type=int, default=60, help="keystrokes per echo run")
    parser.add_argument("--only", choices=("start", "echo"), help="measure only start-up or only echo")
    parser.add_argument(
        "--stream-interval-long",
        type=float,
        help="set [tui] stream_interval_long_s (0.033 gives the fixed 33 ms merge window of before)",
    )
    parser.add_argument(
        "--no-prestart",
        action="store_true",
        help="HERMES_INK_PRESTART=0: the gateway starts only when the TUI asks (as before)",
    )
    parser.add_argument(
        "--upstream-echo",
        action="store_true",
        help="also measure the echo on upstream's own TUI + gateway (a fake OpenAI endpoint streams)",
    )
    parser.add_argument("--upstream-venv", type=Path, default=REPO / ".ci" / "ink-tui" / ".venv-upstream")
    args = parser.parse_args()
    global CONFIG
    if args.no_prestart:
        START_ENV["HERMES_INK_PRESTART"] = "0"
    if args.stream_interval_long is not None:
        CONFIG += f"[tui]\nstream_interval_long_s = {args.stream_interval_long}\n"
    bundle.entry_js()
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-ink-") as tmp:
        root = Path(tmp)
        if args.only != "echo":
            rows += _start_rows(root, args.runs, args.upstream_venv)
        if args.only != "start":
            rows += _echo_rows(root, args.runs, args.chars)
            if args.upstream_echo:
                rows += _upstream_echo_rows(root, args.runs, args.chars, args.upstream_venv)
    width = max(len(r[0]) for r in rows)
    print(f"load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print(f"{'measurement'.ljust(width)}  {'result':<32}  budget")
    for name, value, budget in rows:
        print(f"{name.ljust(width)}  {value:<32}  {budget}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
