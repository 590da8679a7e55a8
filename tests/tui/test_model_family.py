"""``/model claude-sonnet-4`` over real stdio: resolved to the newest Claude id, then used."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from hermes_anthropic.catalog import CLAUDE_MODELS
from hermes_core.model_family import newest
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import text_reply
from tests.tui.client import TuiProcess, write_config


@contextlib.contextmanager
def upstream_on_a_thread() -> Iterator[FakeUpstream]:
    """Run the fake model API on its own event loop, for the synchronous TUI client."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    upstream = FakeUpstream()
    asyncio.run_coroutine_threadsafe(upstream.__aenter__(), loop).result(10)
    try:
        yield upstream
    finally:
        asyncio.run_coroutine_threadsafe(upstream.__aexit__(None, None, None), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_seed_model_command_resolves_and_the_next_turn_uses_it(
    home: Path, spawn: Callable[..., TuiProcess]
) -> None:
    expected, _ = newest("claude-sonnet-4", [m.id for m in CLAUDE_MODELS])
    with upstream_on_a_thread() as upstream:
        upstream.stream("/v1/messages", text_reply("claude here"))
        write_config(
            home,
            'model = "mock:echo"\n[providers.anthropic]\n'
            f'base_url = "{upstream.url}"\napi_key = "sk-ant-x"\n',
        )
        tui = spawn()
        sid = tui.create()
        done = tui.call("command.dispatch", session_id=sid, command="/model claude-sonnet-4")
        assert done["type"] == "exec"
        assert done["output"] == (
            f"Model switched to anthropic:{expected} (resolved from claude-sonnet-4; this session)"
        )
        assert tui.call("session.status", session_id=sid)["model"] == f"anthropic:{expected}"
        tui.turn(sid, "hello")
        assert upstream.last().body["model"] == expected
        texts = [e["payload"].get("text") for e in tui.events(sid, "message.complete")]
        assert "claude here" in texts
