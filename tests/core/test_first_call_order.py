"""The first model call of a turn and the user row's write: which leaves first
(docs/reference/core.md#the-turn-loop).

When the storage says its write would run on the event loop (SQLite while its database thread
is idle), the request leaves before the write starts: otherwise the write, queued beside the
call, ran before the request's own write, which an HTTP client may make a loop pass later (as
aiohttp's does on Python 3.11). When the write goes elsewhere, it starts beside the call. Either
way nothing of the call is shown before the row is stored.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import client_reqrep

from hermes_core import (
    ChatRequest,
    Chunk,
    FinishChunk,
    ProviderBase,
    ProviderSpec,
    TextChunk,
    TextDelta,
    TurnStarted,
    hookimpl,
)
from hermes_core.testing import make_kernel
from tests.core.conftest import collect
from tests.core.deferred_send import send_from_own_task
from tests.core.vendor_kernels import vendor_kernel
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import VENDORS, Vendor
from tests.timing import eventually


class DeferredSend(ProviderBase):
    """Writes its request from a task of its own, a loop pass after ``stream`` is called."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        await send_from_own_task(self.log, "request sent")
        yield TextChunk("hello")
        yield FinishChunk("stop")


class DeferredPlugin:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    @hookimpl
    def hermes_model_providers(self) -> ProviderSpec:
        return ProviderSpec(
            name="deferred",
            summary="deferred",
            factory=lambda settings, **kw: DeferredSend(self.log),
            requires_key=False,
        )


def _noting(log: list[str], method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def noted(*args: Any, **kwargs: Any) -> Any:
        log.append("row write")
        return await method(*args, **kwargs)

    return noted


@pytest.mark.parametrize(
    ("on_loop", "order"),
    [
        (True, ["request sent", "row write"]),  # the write would hold the loop: the request first
        (False, ["row write", "request sent"]),  # the write goes elsewhere: at once, beside it
        (None, ["row write", "request sent"]),  # a backend that does not say: as before
    ],
)
async def test_the_request_leaves_before_a_write_that_would_hold_the_loop(
    workspace: Path, on_loop: bool | None, order: list[str]
) -> None:
    log: list[str] = []
    kernel = make_kernel(DeferredPlugin(log), settings={"model": "deferred:m"})
    async with kernel.running():
        storage: Any = kernel.storage
        if on_loop is not None:
            storage.writes_on_loop = lambda: on_loop
        for name in ("create_session", "create_leased_session", "append_rows"):
            setattr(storage, name, _noting(log, getattr(storage, name)))
        session = await kernel.open_session(source="embed", owner="t", cwd=workspace)
        events = await collect(await session.submit("hi", owner="t"))
        rows = await kernel.storage.load_rows(session.id)
    assert log[:2] == order
    kinds = [type(e) for e in events]
    assert kinds.index(TurnStarted) < kinds.index(TextDelta)  # the row was stored before
    assert [r.role for r in rows] == ["user", "assistant"]
    assert events[-1].text == "hello"


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as up:
        yield up


@pytest.mark.parametrize("vendor", VENDORS, ids=[v.name for v in VENDORS])
async def test_through_a_real_http_provider_and_sqlite_the_request_leaves_first(
    upstream: FakeUpstream, vendor: Vendor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiohttp's client writes the request from its own task on Python 3.11; an idle SQLite
    thread runs the row write on the loop. The write waits for the request on every turn whose
    connection is pooled (a new connection's connect is the first wait: the write starts then)."""
    log: list[str] = []
    write_bytes = client_reqrep.ClientRequest.write_bytes

    async def noted_write(self: Any, *args: Any, **kwargs: Any) -> None:
        if self.method == "POST":
            log.append("request sent")
        await write_bytes(self, *args, **kwargs)

    monkeypatch.setattr(client_reqrep.ClientRequest, "write_bytes", noted_write)
    upstream.replies(vendor.chat_path, [vendor.reply(t) for t in ("one", "two", "three")])
    storage_settings = {"storage": {"backend": "sqlite", "path": str(tmp_path / "h.sqlite3")}}
    kernel = vendor_kernel(vendor, upstream, plugins=("tools", "sqlite"), **storage_settings)
    async with kernel.running():
        storage: Any = kernel.storage
        for name in ("create_session", "create_leased_session", "append_rows"):
            setattr(storage, name, _noting(log, getattr(storage, name)))
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        for text in ("one", "two", "three"):
            await eventually(storage.writes_on_loop, what="an idle database thread")
            del log[:]
            events = await collect(await session.submit(f"say {text}", owner="t"))
            if text != "one":  # the first turn opened the connection
                assert log[:2] == ["request sent", "row write"]
            assert events[-1].text == text
        rows = await kernel.storage.load_rows(session.id)
    assert [r.role for r in rows] == ["user", "assistant"] * 3
