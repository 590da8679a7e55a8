"""Run-console benchmarks in headless Chromium against ``hermes api --console`` (mock provider).

Prints a table and exits 0; not a test. Needs Debian's ``chromium`` and Playwright
(``pip install -e '.[console-tests]'``).

- page load to first event shown, on a running run (median of N loads; the page's own clock
  from navigation start to the first event in the DOM);
- a 20,000-token run streamed into the page: every event shown once and in order, the final text
  exact, and the page responsive meanwhile (longest main-thread task, longest timer delay,
  keystrokes typed into the steer box while it streams);
- the served assets' total size.

Run: ``python bench/bench_console.py [--loads N]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent / "hermes"
KEY = "hk_bench_console_key_0123456789"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WATCH = """
window.__bench = {longest: 0, tasks: 0, drift: 0};
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    window.__bench.tasks += 1;
    window.__bench.longest = Math.max(window.__bench.longest, e.duration);
  }
}).observe({type: "longtask", buffered: true});
let last = performance.now();
setInterval(() => {
  const now = performance.now();
  window.__bench.drift = Math.max(window.__bench.drift, now - last - 10);
  last = now;
}, 10);
"""


def start_server(home: Path) -> tuple[subprocess.Popen[str], int]:
    (home / "config.toml").write_text(
        f'[api_server]\nconsole = true\nkey = "{KEY}"\n'
        "[agent]\nprovider_retries = 0\n[titles]\nrefine = false\n"
    )
    env = {"HERMES_HOME": str(home), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [str(BIN), "api", "--port", "0"],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "listening on http://" in line:
            port = int(line.rsplit(":", 1)[1].split("/", 1)[0])
            break
    else:
        raise SystemExit("the server did not start")
    stream = proc.stderr
    threading.Thread(target=lambda: stream.read(), daemon=True).start()  # keep the access log flowing
    return proc, port


def start_run(port: int, text: str) -> str:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/runs",
        data=json.dumps({"input": text, "model": "mock:echo"}).encode(),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as reply:
        return str(json.load(reply)["run_id"])


def wait_js(page: Any, expression: str, timeout: float = 60) -> None:
    """Poll an expression through the debugger (the console's CSP forbids Playwright's eval)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise TimeoutError(expression)
        time.sleep(0.005)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=20_000)
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium not installed (apt-get install chromium)")
        return 0
    from playwright.sync_api import sync_playwright

    from hermes_api_server.console.routes import asset_sizes

    rows: list[tuple[str, str, str]] = []
    sizes = asset_sizes()
    total = sum(sizes.values())
    rows.append(("served assets, total", f"{total / 1024:.1f} KB ({len(sizes)} files)", "≤ 150 KB"))
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = start_server(Path(tmp))
        base = f"http://127.0.0.1:{port}"
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
                page = browser.new_page()
                page.set_default_timeout(120_000)
                page.goto(base + "/console")
                page.fill("#key", KEY)
                page.click("#signin-submit")
                page.wait_for_selector("#runs-body")

                # 1. Page load to first event shown, on a running run.
                run_id = start_run(port, "[[tokens 100000]] [[delay 20]] long")
                loads: list[float] = []
                for _ in range(args.loads):
                    page.goto(f"{base}/console/runs/{run_id}")
                    wait_js(page, "window.hermesConsole.run && window.hermesConsole.run.firstEventAt")
                    loads.append(float(page.evaluate("window.hermesConsole.run.firstEventAt")))
                page.click("#stop")
                page.wait_for_selector(".event.terminal")
                rows.append(
                    (
                        "page load → first event shown (running run)",
                        f"median {statistics.median(loads):.0f} ms, max {max(loads):.0f} ms (n={len(loads)})",
                        "≤ 300 ms median",
                    )
                )

                # 2. A 20,000-token run streamed into the page, typing meanwhile.
                page.goto(base + "/console")
                page.wait_for_selector("#prompt")
                page.evaluate(WATCH)
                page.fill("#prompt", f"[[tokens {args.tokens}]] [[delay 1]] go")
                page.select_option("#model", "mock:echo")
                started = time.perf_counter()
                page.click("#start-submit")
                page.wait_for_selector(".event.message")
                page.evaluate(WATCH)
                typed = "the page stays usable while it streams"
                keys: list[float] = []
                page.click("#steer")
                for ch in typed:
                    t0 = time.perf_counter()
                    page.keyboard.type(ch)
                    keys.append((time.perf_counter() - t0) * 1000)
                value = page.input_value("#steer")
                streaming = page.locator(".event.terminal").count() == 0
                page.wait_for_selector(".event.terminal.completed")
                elapsed = time.perf_counter() - started
                facts: dict[str, Any] = page.evaluate("window.hermesConsole.run")
                watch: dict[str, Any] = page.evaluate("window.__bench")
                expected = " ".join(f"t{i}" for i in range(args.tokens))
                seqs = facts["seqs"]
                complete = (
                    facts["text"] == expected
                    and seqs == list(range(1, len(seqs) + 1))
                    and facts["duplicates"] == 0
                    and facts["missing"] == 0
                )
                shown = page.evaluate("document.querySelector('.event.message').textContent") == expected
                rows.append(
                    (
                        f"{args.tokens:,}-token run streamed",
                        f"{len(seqs)} events in {elapsed:.1f} s; all shown once, in order: {complete}; "
                        f"text exact on screen: {shown}",
                        "no dropped event",
                    )
                )
                rows.append(
                    (
                        "  responsiveness while streaming",
                        f"typed {len(typed)} keys while streaming={streaming}, "
                        f"value intact: {value == typed}; "
                        f"key p50 {statistics.median(keys):.1f} ms, max {max(keys):.1f} ms; "
                        f"longest task {watch['longest']:.0f} ms ({watch['tasks']} over 50 ms); "
                        f"worst timer delay {watch['drift']:.0f} ms",
                        "input usable",
                    )
                )
                browser.close()
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
    width = max(len(r[0]) for r in rows)
    print(f"{'metric'.ljust(width)}  result  [budget]")
    for name, result, budget in rows:
        print(f"{name.ljust(width)}  {result}  [{budget}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
