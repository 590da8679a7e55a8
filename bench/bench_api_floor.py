"""The floor under ``hermes api``'s added time-to-first-token: a bare aiohttp relay.

The relay is an aiohttp server whose one route forwards the request body to the fake upstream
of ``bench_api.py`` through a pooled aiohttp client and copies the streamed bytes back — no
agent, no session, no storage. Whatever it adds over going straight to the fake is what any
server built on aiohttp's server and client pays on this machine, so it bounds what the API
budgets can ask of ``hermes api``. Run: ``.venv/bin/python bench/bench_api_floor.py``.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import bench_api

PATH = "/v1/chat/completions"


def run_relay(port: int, fake_port: int) -> None:
    """Serve the relay (in its own process) until terminated."""
    from aiohttp import ClientSession, TCPConnector, web

    upstream = f"http://127.0.0.1:{fake_port}{PATH}"

    async def relay(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        session: ClientSession = request.app["client"]
        async with session.post(upstream, data=body, headers={"Content-Type": "application/json"}) as up:
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            async for chunk in up.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    async def client(app: web.Application):  # type: ignore[no-untyped-def]
        app["client"] = ClientSession(connector=TCPConnector(limit=0))
        yield
        await app["client"].close()

    app = web.Application()
    app.cleanup_ctx.append(client)
    app.router.add_post(PATH, relay)
    serve(app, port)


def serve(app: Any, port: int) -> None:
    """Run an aiohttp app on loopback until terminated, on the loop ``hermes api`` runs on
    (uvloop where installed), so a floor is measured alike."""
    from aiohttp import web

    from hermes_cli.event_loop import loop_factory

    factory = loop_factory()
    loop = factory() if factory is not None else asyncio.new_event_loop()
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, loop=loop)


async def main() -> None:
    fake_port, relay_port = bench_api.free_port(), bench_api.free_port()
    fake = subprocess.Popen([sys.executable, bench_api.__file__, "--fake", str(fake_port)])
    relay = subprocess.Popen([sys.executable, __file__, "--relay", str(relay_port), str(fake_port)])
    await asyncio.sleep(1.5)
    direct = bench_api.Target(f"http://127.0.0.1:{fake_port}{PATH}", None, "")
    relayed = bench_api.Target(f"http://127.0.0.1:{relay_port}{PATH}", None, "")
    try:
        for target in (direct, relayed):
            await bench_api.ttft(target, 1, 5)
            await bench_api.ttft(target, 50, 1)
        d1, r1 = await bench_api.ttft(direct, 1, 40), await bench_api.ttft(relayed, 1, 40)
        d50, r50 = await bench_api.ttft(direct, 50, 3), await bench_api.ttft(relayed, 50, 3)
    finally:
        await direct.close()
        await relayed.close()
        fake.terminate()
        relay.terminate()
    start = time.perf_counter()
    sum(range(10**6))
    reference = (time.perf_counter() - start) * 1000
    c1 = statistics.median(r1) - statistics.median(d1)
    c50 = bench_api.pct(r50, 0.95) - bench_api.pct(d50, 0.95)
    rows = [
        ("TTFT c=1 median (ms)", statistics.median(d1), statistics.median(r1), c1),
        ("TTFT c=50 p95 (ms)", bench_api.pct(d50, 0.95), bench_api.pct(r50, 0.95), c50),
    ]
    print(f"{'metric':<28} {'direct':>8} {'relay':>8} {'added':>8}")
    for name, plain, via, added in rows:
        print(f"{name:<28} {plain:8.2f} {via:8.2f} {added:+8.2f}")
    print(f"CPU reference: sum(range(10**6)) took {reference:.1f} ms")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--relay":
        run_relay(int(sys.argv[2]), int(sys.argv[3]))
    else:
        asyncio.run(main())
