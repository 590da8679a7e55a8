"""``hermes run --session ID "/model …"`` and ``hermes models`` on the three set-ups of issue 22
(docs/slash-commands.md#model): an OpenAI key only, an OpenRouter key only, and the ``openai``
provider at a self-hosted server."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_helpers import Hermes
from tests.providers.self_hosted import (
    OPENAI_ONLY,
    OPENROUTER_ONLY,
    assert_chat,
    self_hosted_config,
    self_hosted_on_a_thread,
)


def test_openai_key_only_refuses_a_keyless_model_and_changes_nothing(hermes: Hermes, home: Path) -> None:
    (home / "config.toml").write_text(OPENAI_ONLY)
    refused = hermes("run", "--session", "s1", "/model claude-sonnet-4")
    assert refused.returncode == 2, refused.stderr
    assert refused.stdout == ""
    assert "anthropic:claude-sonnet-4-6 (set ANTHROPIC_API_KEY)" in refused.stderr
    assert "openrouter:anthropic/claude-sonnet-4.6 (set OPENROUTER_API_KEY)" in refused.stderr
    explicit = hermes("run", "--session", "s1", "/model anthropic:claude-sonnet-4-6")
    assert explicit.returncode == 2 and "ANTHROPIC_API_KEY" in explicit.stderr

    shown = hermes("run", "--session", "s1", "/model")
    assert shown.stdout.startswith("Current model: openai:gpt-4.1-mini ")
    switched = hermes("run", "--session", "s1", "/model gpt-4.1")
    assert switched.stdout == "Model switched to openai:gpt-4.1 (this session)\n", switched.stderr
    back = hermes("run", "--session", "s1", "/model gpt-4.1-mini")
    assert back.stdout == "Model switched to openai:gpt-4.1-mini (this session)\n", back.stderr


def test_openrouter_key_only_resolves_on_openrouter(hermes: Hermes, home: Path) -> None:
    (home / "config.toml").write_text(OPENROUTER_ONLY)
    claude = hermes("run", "--session", "s2", "/model claude-sonnet-4")
    assert claude.stdout == (
        "Model switched to openrouter:anthropic/claude-sonnet-4.6 "
        "(resolved from claude-sonnet-4; this session)\n"
    ), claude.stderr
    gpt = hermes("run", "--session", "s2", "/model gpt-4.1")
    assert gpt.stdout == "Model switched to openrouter:openai/gpt-4.1 (resolved from gpt-4.1; this session)\n"
    back = hermes("run", "--session", "s2", "/model openrouter:openai/gpt-4.1-mini")
    assert back.stdout == "Model switched to openrouter:openai/gpt-4.1-mini (this session)\n"
    refused = hermes("run", "--session", "s2", "/model gpt-5")
    assert refused.returncode == 2 and "openai:gpt-5 (set OPENAI_API_KEY)" in refused.stderr


def test_self_hosted_server_is_listed_probed_and_switched_back_to(hermes: Hermes, home: Path) -> None:
    with self_hosted_on_a_thread() as server:
        (home / "config.toml").write_text(self_hosted_config(server.url))
        refreshed = hermes("models", "--refresh")
        assert refreshed.returncode == 0, refreshed.stderr
        rows = [line.split() for line in refreshed.stdout.splitlines()]
        openai_rows = [r for r in rows if len(r) > 2 and "openai" in r[:2]]
        assert [r[-5] for r in openai_rows] == ["gpt-4.1-mini", "qwen3-coder-30b"], refreshed.stdout
        assert all(r[-1] == "live" for r in openai_rows)
        assert "32768" in openai_rows[0]  # the server's max_model_len
        assert server.probes()[-1].headers.get("Authorization") == "Bearer sk-self-hosted"
        # A normal open probes the current provider too, because it is user-defined.
        assert "qwen3-coder-30b" in hermes("models").stdout

        first = hermes("run", "--session", "s3", "hello")
        assert first.stdout == "gpt-4.1-mini says: hello\n", first.stderr
        assert_chat(server, "hello", "gpt-4.1-mini")
        switched = hermes("run", "--session", "s3", "/model qwen3-coder-30b")
        assert switched.stdout == "Model switched to openai:qwen3-coder-30b (this session)\n", switched.stderr
        second = hermes("run", "--session", "s3", "second")
        assert second.stdout == "qwen3-coder-30b says: second\n", second.stderr
        assert_chat(server, "second", "qwen3-coder-30b")
        # Each new process asks the server once for its list before resolving a bare name.
        probes = len(server.probes())
        back = hermes("run", "--session", "s3", "/model gpt-4.1-mini")
        assert back.stdout == "Model switched to openai:gpt-4.1-mini (this session)\n", back.stderr
        assert len(server.probes()) == probes + 1
        third = hermes("run", "--session", "s3", "third")
        assert third.stdout == "gpt-4.1-mini says: third\n", third.stderr
        assert_chat(server, "third", "gpt-4.1-mini")
