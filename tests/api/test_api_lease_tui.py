"""Check 31 (lease): a session held by a running ``hermes tui`` process gets 409 ``session_in_use``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.api_helpers import Server, assert_error, call
from tests.tui.client import TuiProcess


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "shared-home"


@pytest.fixture
def tui(home: Path) -> Iterator[TuiProcess]:
    home.mkdir(parents=True, exist_ok=True)
    proc = TuiProcess(home, cwd=home)
    proc.wait_event("", "gateway.ready", timeout=20)
    yield proc
    proc.close()


def chat(text: str, model: str = "mock:echo") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


async def assert_all_agent_posts_refused(server: Server, sid: str) -> None:
    """Chat, Responses and a new run on ``sid`` each get the docs/reference/api-server.md#error-codes 409
    envelope."""
    header = {"X-Hermes-Session-Id": sid}
    assert_error(
        await call(server, "POST", "/v1/chat/completions", chat("hello"), headers=header),
        409,
        "session_in_use",
    )
    assert_error(
        await call(server, "POST", "/v1/responses", {"input": "hello"}, headers=header), 409, "session_in_use"
    )
    assert_error(
        await call(server, "POST", "/v1/runs", {"input": "hello", "session_id": sid}), 409, "session_in_use"
    )


async def test_a_session_resumed_in_hermes_tui_is_refused_until_it_closes(
    make_server: Callable[..., Server], home: Path, tui: TuiProcess
) -> None:
    server = make_server(home=home)
    sid = "api-then-tui"
    first = await call(
        server, "POST", "/v1/chat/completions", chat("one"), headers={"X-Hermes-Session-Id": sid}
    )
    assert first.status == 200, first.text

    # The TUI takes the writer lease by resuming the session the API created (and released).
    snapshot = await asyncio.to_thread(tui.call, "session.resume", {"session_id": sid}, 15)
    assert snapshot["session_id"] == sid
    await asyncio.to_thread(tui.turn, sid, "two")
    await assert_all_agent_posts_refused(server, sid)

    # Once the TUI closes the session, the API continues it with the whole history.
    await asyncio.to_thread(tui.call, "session.close", {"session_id": sid})
    after = await call(
        server,
        "POST",
        "/v1/chat/completions",
        chat("three", model="mock:history"),
        headers={"X-Hermes-Session-Id": sid},
    )
    assert after.status == 200, after.text
    assert after.json["choices"][0]["message"]["content"] == "Turns: one | two | three"


async def test_a_session_created_in_hermes_tui_is_refused(
    make_server: Callable[..., Server], home: Path, tui: TuiProcess
) -> None:
    server = make_server(home=home)
    sid = await asyncio.to_thread(tui.create)
    await asyncio.to_thread(tui.turn, sid, "from the tui")
    await assert_all_agent_posts_refused(server, sid)
    # Other sessions are unaffected.
    free = await call(
        server, "POST", "/v1/chat/completions", chat("free"), headers={"X-Hermes-Session-Id": "other"}
    )
    assert free.status == 200, free.text
