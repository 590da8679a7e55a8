"""The console in headless Chromium through nginx (round robin) in front of three ``hermes api``
instances sharing PostgreSQL and Redis (docs/console.md#behind-a-load-balancer): what a person
sees when each of the page's requests may land on another instance."""

from __future__ import annotations

import asyncio
import queue
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.api.api_helpers import Server, start_server
from tests.api.console.browser import browser, shot  # noqa: F401 (fixture)
from tests.api.console.helpers import KEY_A, KEY_B
from tests.api.console.test_console_browser import GUARDED_ECHO, page, sign_in, start, wait_terminal  # noqa: F401
from tests.redis.conftest import STORAGE_POSTGRES, Shared, own_database
from tests.redis.test_redis_instances import config
from tests.redis.test_redis_nginx import Front
from tests.services import postgres_dsn, redis_url
from tests.timing import eventually_sync

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.timeout(240)


def up(nginx: Front) -> bool:
    try:
        with urllib.request.urlopen(nginx.base + "/health", timeout=5) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


@pytest.fixture
def shared_sync() -> Iterator[Shared]:
    """What ``shared`` gives, set up on a thread of its own: Playwright's sync API already runs an
    event loop on this one. A Redis database of its own and a fresh PostgreSQL schema."""
    postgres_dsn()  # the console's sessions are shared through the PostgreSQL records
    with own_database(redis_url()) as url:
        ready: queue.Queue[str | BaseException] = queue.Queue()
        done = threading.Event()

        async def hold() -> None:
            from tests.pg_schema import fresh_schema

            async with fresh_schema() as dsn:
                ready.put(dsn)
                await asyncio.to_thread(done.wait)

        def run() -> None:
            try:
                asyncio.run(hold())
            except BaseException as exc:  # handed to the test below
                ready.put(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        dsn = ready.get(timeout=60)
        if isinstance(dsn, BaseException):
            raise dsn
        try:
            yield Shared(url, STORAGE_POSTGRES, {"HERMES_REDIS_URL": url, "HERMES_POSTGRES_DSN": dsn})
        finally:
            done.set()
            thread.join(60)


@pytest.fixture
def front(tmp_path: Path, shared_sync: Shared) -> Iterator[Front]:
    shared = shared_sync
    text = config(shared) + f'console = true\nkeys = ["{KEY_A}", "{KEY_B}"]\n'
    backends = [start_server(tmp_path / f"i{i}", config=text, env=shared.env) for i in range(3)]
    nginx = Front(tmp_path / "nginx", backends)
    nginx.key = KEY_A
    try:
        eventually_sync(lambda: up(nginx), timeout=20, interval=0.05, what="nginx listening")
        yield nginx
    finally:
        nginx.stop()
        for b in backends:
            b.stop()


def test_through_nginx_sign_in_stream_approve_reload_and_stop(page: Page, front: Front) -> None:  # noqa: F811
    srv: Server = front  # type: ignore[assignment]
    sign_in(page, srv)
    # Every call of the page may land on another instance: the list, the models, the start.
    page.reload()
    page.wait_for_selector("#runs-body")

    # An approval asked on the run's owner, answered from the page through whichever instance.
    start(page, GUARDED_ECHO)
    card = page.locator(".event.approval.open")
    card.wait_for()
    card.locator("button[data-choice=once]").click()
    page.wait_for_selector(".event.approval.answered:has-text('answered: once')")
    wait_terminal(page, "completed")
    assert page.text_content(".event.message") == "Done: hermes-guard-test"

    # A long run streams, survives a reload mid-run (resumed from another instance), and stops.
    page.click("#home")
    run_id = start(page, "[[tokens 2000]] [[delay 20]] go")
    page.wait_for_selector(".event.message:has-text('t10')")
    assert page.text_content("#status") == "running"
    page.reload()
    page.wait_for_selector(".event.started")
    page.wait_for_selector(".event.message:has-text('t40')")
    assert page.text_content("#status") == "running"
    shot(page, "20-nginx-streaming")
    page.click("#stop")
    facts = wait_terminal(page, "cancelled")
    assert 40 < len(facts["text"].split()) < 2000
    page.click("#home")
    page.locator(f"tr[data-run-id='{run_id}'] .badge.cancelled").wait_for()
    assert page.locator("#runs-body tr").count() == 2

    # Sign-out through one instance ends the session on all of them.
    page.click("#logout")
    page.wait_for_selector("#signin")
    for _ in range(3):
        page.goto(front.base + "/console")
        page.wait_for_selector("#signin")
