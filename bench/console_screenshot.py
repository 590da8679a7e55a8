"""Regenerate ``docs/console.png``: a console run with its subagent panel, one child waiting for
approval (docs/console.md shows the picture).

Offline and repeatable: ``hermes api --console`` with the mock provider in a temporary home,
headless Debian ``chromium`` driven by Playwright (``pip install -e '.[console-tests]'``). The run
delegates two tasks: one child streams a short answer and completes, the other asks to run a
guarded command and waits (nothing is approved, so nothing runs). Not a test; prints the size.

Run: ``.venv/bin/python bench/console_screenshot.py [--out docs/console.png]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_console import ARGS, KEY, start_server, wait_js

REPO = Path(__file__).resolve().parents[1]
#: The size the docs page shows it at, and the budget that keeps the repository small.
WIDTH, HEIGHT = 1100, 1000
MAX_BYTES = 200_000
TASKS = [
    {"goal": "Summarise what changed in CHANGELOG.md [[tokens 24]]"},
    {"goal": 'Clean the old build [[tool terminal {"command": "rm -rf build"}]]'},
]
PROMPT = "Tidy the release branch " + f"[[tool delegate_task {json.dumps({'tasks': TASKS})}]]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "console.png")
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium not installed (apt-get install chromium)")
        return 1
    from playwright.sync_api import sync_playwright

    home = Path(tempfile.mkdtemp(prefix="hermes-console-shot-"))
    server, port = start_server(home)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
            page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
            page.set_default_timeout(60_000)
            page.goto(f"http://127.0.0.1:{port}/console")
            page.fill("#key", KEY)
            page.click("#signin-submit")
            page.wait_for_selector("#runs-body")
            page.fill("#prompt", PROMPT)
            page.wait_for_selector("#model option[value='mock:echo']", state="attached")
            page.select_option("#model", "mock:echo")
            page.click("#start-submit")
            page.wait_for_selector(".event.approval.open")
            page.wait_for_selector("#subagents .subagent .sub-status:text-is('completed')")
            wait_js(page, "document.querySelectorAll('#subagents .subagent').length === 2")
            page.locator(".event.approval.open button").first.wait_for()
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out))
            browser.close()
    finally:
        started = time.monotonic()
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
        print(f"server stopped in {time.monotonic() - started:.1f} s")
        shutil.rmtree(home, ignore_errors=True)
    size = args.out.stat().st_size
    print(f"{args.out}: {size / 1024:.0f} KB ({WIDTH}x{HEIGHT})")
    if size > MAX_BYTES:
        print(f"larger than {MAX_BYTES // 1000} KB: keep the picture smaller")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
