"""``/model`` and ``config.set model`` over the TUI gateway on the three set-ups of issue 22
(docs/slash-commands.md#model): an OpenAI key only, an OpenRouter key only, and the ``openai``
provider at a self-hosted server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.providers.self_hosted import (
    OPENAI_ONLY,
    OPENROUTER_ONLY,
    assert_chat,
    self_hosted_config,
    self_hosted_on_a_thread,
)
from tests.tui.client import TuiProcess, write_config


def _rows(options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["slug"]: row for row in options["providers"]}


def test_openai_key_only_refuses_keyless_models(home: Path, spawn: Callable[..., TuiProcess]) -> None:
    write_config(home, OPENAI_ONLY)
    tui = spawn()
    sid = tui.create()
    refused = tui.error("command.dispatch", session_id=sid, command="/model claude-sonnet-4")
    assert refused.code == 4002
    assert "ANTHROPIC_API_KEY" in refused.message and "OPENROUTER_API_KEY" in refused.message
    assert refused.data["keys"] == {"anthropic": "ANTHROPIC_API_KEY", "openrouter": "OPENROUTER_API_KEY"}
    assert "anthropic:claude-sonnet-4-6" in refused.data["candidates"]
    by_config = tui.error("config.set", session_id=sid, key="model", value="anthropic:claude-sonnet-4-6")
    assert by_config.code == 4002 and by_config.data["keys"] == {"anthropic": "ANTHROPIC_API_KEY"}
    assert tui.call("session.status", session_id=sid)["model"] == "openai:gpt-4.1-mini"

    switched = tui.call("command.dispatch", session_id=sid, command="/model gpt-4.1")
    assert switched["output"] == "Model switched to openai:gpt-4.1 (this session)"
    back = tui.call("config.set", session_id=sid, key="model", value="gpt-4.1-mini")
    assert back["value"] == "openai:gpt-4.1-mini"
    rows = _rows(tui.call("model.options", session_id=sid))
    assert rows["openai"]["authenticated"] is True and rows["openai"]["is_current"] is True
    assert rows["anthropic"]["authenticated"] is False


def test_openrouter_key_only_resolves_on_openrouter(home: Path, spawn: Callable[..., TuiProcess]) -> None:
    write_config(home, OPENROUTER_ONLY)
    tui = spawn()
    sid = tui.create()
    done = tui.call("command.dispatch", session_id=sid, command="/model claude-sonnet-4")
    switched = "Model switched to openrouter:anthropic/claude-sonnet-4.6"
    assert done["output"] == f"{switched} (resolved from claude-sonnet-4; this session)"
    gpt = tui.call("config.set", session_id=sid, key="model", value="gpt-4.1")
    assert gpt["value"] == "openrouter:openai/gpt-4.1"
    back = tui.call("command.dispatch", session_id=sid, command="/model openrouter:openai/gpt-4.1-mini")
    assert back["output"] == "Model switched to openrouter:openai/gpt-4.1-mini (this session)"
    refused = tui.error("command.dispatch", session_id=sid, command="/model gpt-5")
    assert refused.code == 4002 and refused.data["keys"] == {"openai": "OPENAI_API_KEY"}


def test_self_hosted_server_lists_runs_and_switches_back(
    home: Path, spawn: Callable[..., TuiProcess]
) -> None:
    with self_hosted_on_a_thread() as server:
        write_config(home, self_hosted_config(server.url))
        tui = spawn()
        sid = tui.create()
        rows = _rows(tui.call("model.options", session_id=sid))
        assert rows["openai"]["models"] == ["gpt-4.1-mini", "qwen3-coder-30b"]
        assert "warning" not in rows["openai"]

        tui.turn(sid, "hello")
        assert_chat(server, "hello", "gpt-4.1-mini")
        switched = tui.call("command.dispatch", session_id=sid, command="/model qwen3-coder")
        assert switched["output"] == (
            "Model switched to openai:qwen3-coder-30b (resolved from qwen3-coder; this session)"
        )
        done = tui.turn(sid, "second")
        assert done["text"] == "qwen3-coder-30b says: second"
        assert_chat(server, "second", "qwen3-coder-30b")
        back = tui.call("config.set", session_id=sid, key="model", value="gpt-4.1-mini")
        assert back["value"] == "openai:gpt-4.1-mini"
        tui.turn(sid, "third")
        assert_chat(server, "third", "gpt-4.1-mini")
