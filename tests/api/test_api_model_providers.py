"""The request's ``model`` on the three set-ups of issue 22 (docs/reference/api-server.md#model-selection):
an OpenAI key only, an OpenRouter key only, and the ``openai`` provider at a self-hosted server.

A model only keyless providers offer is the client's mistake: 400 ``model_unavailable`` naming the
key to set, never a 502 from a turn that could not run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.api.api_helpers import Server, assert_error, call
from tests.providers.self_hosted import OPENAI_ONLY, SelfHosted, assert_chat, self_hosted_config

DIRECT = "[api_server]\ndirect_model_requests = true\n"
OPENROUTER_MODELS = ("openai/gpt-4.1-mini", "openai/gpt-4.1", "anthropic/claude-sonnet-4.6")


def chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "hermes-agent", "messages": [{"role": "user", "content": text}], **extra}


def reply_text(reply: Any) -> str:
    return str(reply.json["choices"][0]["message"]["content"])


async def test_openai_key_only_refuses_keyless_models_with_the_key_to_set(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server(OPENAI_ONLY + DIRECT)
    explicit = await call(
        srv, "POST", "/v1/chat/completions", chat("hi", model="anthropic:claude-sonnet-4-6")
    )
    err = assert_error(explicit, 400, "model_unavailable")
    assert err["param"] == "model" and "ANTHROPIC_API_KEY" in err["message"]
    assert err["keys"] == {"anthropic": "ANTHROPIC_API_KEY"}
    bare = await call(srv, "POST", "/v1/chat/completions", chat("hi", model="claude-sonnet-4"))
    err = assert_error(bare, 400, "model_unavailable")
    assert err["keys"] == {"anthropic": "ANTHROPIC_API_KEY", "openrouter": "OPENROUTER_API_KEY"}
    assert "anthropic:claude-sonnet-4-6" in err["candidates"]
    run = await call(srv, "POST", "/v1/runs", {"input": "hi", "model": "claude-sonnet-4"})
    assert_error(run, 400, "model_unavailable")
    with_provider = await call(
        srv, "POST", "/v1/responses", {"input": "hi", "model": "claude-sonnet-4-6", "provider": "anthropic"}
    )
    assert_error(with_provider, 400, "model_unavailable")
    options = (await call(srv, "GET", "/api/model/options")).json
    assert options["model"] == "gpt-4.1-mini" and options["provider"] == "openai"


async def test_openrouter_key_only_resolves_on_openrouter(make_server: Callable[..., Server]) -> None:
    async with SelfHosted(OPENROUTER_MODELS, key="sk-or-only") as server:
        config = (
            'model = "openrouter:openai/gpt-4.1-mini"\n[providers.openrouter]\n'
            f'api_key = "sk-or-only"\nbase_url = "{server.url}/v1"\n'
        )
        srv = make_server(config + DIRECT)
        headers = {"X-Hermes-Session-Id": "or-session"}
        claude = await call(
            srv, "POST", "/v1/chat/completions", chat("one", model="claude-sonnet-4"), headers=headers
        )
        assert claude.status == 200, claude.text
        assert claude.headers["X-Hermes-Model"] == "openrouter:anthropic/claude-sonnet-4.6"
        assert reply_text(claude) == "anthropic/claude-sonnet-4.6 says: one"
        assert_chat(server, "one", "anthropic/claude-sonnet-4.6")
        gpt = await call(srv, "POST", "/v1/chat/completions", chat("two", model="gpt-4.1"), headers=headers)
        assert gpt.headers["X-Hermes-Model"] == "openrouter:openai/gpt-4.1"
        assert_chat(server, "two", "openai/gpt-4.1")
        back = await call(
            srv, "POST", "/v1/chat/completions", chat("three", model="claude-sonnet-4.6"), headers=headers
        )
        assert back.headers["X-Hermes-Model"] == "openrouter:anthropic/claude-sonnet-4.6"
        assert_chat(server, "three", "anthropic/claude-sonnet-4.6")
        refused = await call(
            srv, "POST", "/v1/chat/completions", chat("four", model="gpt-5"), headers=headers
        )
        assert assert_error(refused, 400, "model_unavailable")["keys"] == {"openai": "OPENAI_API_KEY"}


async def test_self_hosted_server_models_are_listed_and_requested(make_server: Callable[..., Server]) -> None:
    async with SelfHosted() as server:
        srv = make_server(self_hosted_config(server.url) + DIRECT)
        options = (await call(srv, "GET", "/api/model/options")).json
        row = next(p for p in options["providers"] if p["slug"] == "openai")
        assert row["is_user_defined"] is True and row["probe"]["status"] == "live"
        assert row["models"] == ["gpt-4.1-mini", "qwen3-coder-30b"]
        headers = {"X-Hermes-Session-Id": "local-session"}
        first = await call(srv, "POST", "/v1/chat/completions", chat("hello"), headers=headers)
        assert reply_text(first) == "gpt-4.1-mini says: hello"
        assert_chat(server, "hello", "gpt-4.1-mini")
        other = await call(
            srv, "POST", "/v1/chat/completions", chat("second", model="qwen3-coder"), headers=headers
        )
        assert other.headers["X-Hermes-Model"] == "openai:qwen3-coder-30b"
        assert_chat(server, "second", "qwen3-coder-30b")
        back = await call(
            srv, "POST", "/v1/chat/completions", chat("third", model="gpt-4.1-mini"), headers=headers
        )
        assert back.headers["X-Hermes-Model"] == "openai:gpt-4.1-mini"
        assert_chat(server, "third", "gpt-4.1-mini")
        run = await call(srv, "POST", "/v1/runs", {"input": "fourth", "model": "qwen3-coder-30b"})
        assert run.status == 202, run.text
        assert_error(
            await call(srv, "POST", "/v1/runs", {"input": "x", "model": "anthropic:claude-sonnet-4-6"}),
            400,
            "model_unavailable",
        )
