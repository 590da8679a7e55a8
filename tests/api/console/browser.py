"""Headless Chromium for the console tests: the system browser driven by Playwright, nothing
downloaded. Missing Chromium (or Playwright) skips the browser tests with a line saying how to
get them, except under ``CI=true``, where it fails."""

from __future__ import annotations

import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REPO = Path(__file__).resolve().parents[3]
SHOTS = REPO / "artifacts" / "console-screenshots"


def chromium_path() -> str:
    """Return the system Chromium, or skip (fail under CI) when it or Playwright is missing."""
    found = os.environ.get("HERMES_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    reason = None
    if not found:
        reason = "chromium not installed (apt-get install chromium; .ci/run installs it)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "playwright not installed (pip install -e '.[console-tests]')"
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    assert found is not None
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium per test module; each test opens its own context (own cookies).
    Playwright starts it with a fresh temporary user-data-dir."""
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


def shot(page: object, name: str) -> Path:
    """Save a screenshot of the page's current state for review (artifacts/, not committed)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
    return path


class CuttingProxy:
    """A loopback TCP proxy whose open connections can be cut, to drop a browser's event stream."""

    def __init__(self, port: int) -> None:
        self.upstream = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        self.cuts = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream))
            with self.lock:
                self.open += [client, server]
            threading.Thread(target=self._pipe, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        """Close every connection open now (the browser sees its stream drop)."""
        with self.lock:
            doomed, self.open = self.open, []
        for s in doomed:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        self.cuts += 1

    def close(self) -> None:
        self.listener.close()
        self.cut()
