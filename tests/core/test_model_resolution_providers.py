"""Provider-aware resolution on the three set-ups people really have (docs/slash-commands.md#model):
an ``openai`` key only; an OpenRouter key only; the ``openai`` provider at a self-hosted URL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core import Kernel, ModelNeedsKey, ModelNotFound
from hermes_core.model_family import FAMILY, VENDOR_EXACT, best_match
from hermes_core.testing import make_kernel
from tests.providers.upstream_fakes import FakeUpstream, closed_port

PLUGINS = ["mock", "openai", "anthropic"]


def openai_only() -> Kernel:
    return make_kernel(
        entry_points=PLUGINS,
        settings={"model": "openai:gpt-4.1-mini", "providers": {"openai": {"api_key": "sk-openai"}}},
    )


def openrouter_only() -> Kernel:
    return make_kernel(
        entry_points=PLUGINS,
        settings={
            "model": "openrouter:openai/gpt-4.1-mini",
            "providers": {"openrouter": {"api_key": "sk-or"}},
        },
    )


@pytest.fixture
async def self_hosted() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as upstream:
        upstream.json(
            "GET",
            "/v1/models",
            {"object": "list", "data": [{"id": "gpt-4.1-mini"}, {"id": "qwen3-coder-30b"}]},
        )
        yield upstream


def self_hosted_kernel(upstream: FakeUpstream) -> Kernel:
    return make_kernel(
        entry_points=PLUGINS,
        settings={
            "model": "openai:gpt-4.1-mini",
            "providers": {"openai": {"api_key": "sk-local", "base_url": f"{upstream.url}/v1"}},
        },
    )


def test_vendor_prefixed_ids_follow_the_same_rules() -> None:
    ids = [
        "anthropic/claude-sonnet-4.5",
        "anthropic/claude-sonnet-4.6",
        "openai/gpt-4.1",
        "openai/gpt-4.1-mini",
    ]
    assert best_match("gpt-4.1", ids) == (VENDOR_EXACT, ["openai/gpt-4.1"])
    assert best_match("claude-sonnet-4", ids) == (FAMILY, ["anthropic/claude-sonnet-4.6"])
    assert best_match("anthropic/claude-sonnet-4", ids) == (FAMILY, ["anthropic/claude-sonnet-4.6"])
    # The same short id from two vendors is a tie, never a guess.
    assert best_match("m-2", ["a/m-2", "b/m-2"]) == (VENDOR_EXACT, ["a/m-2", "b/m-2"])
    assert best_match("m", ["a/m-2", "b/m-2"]) == (FAMILY, ["a/m-2", "b/m-2"])
    assert best_match("claude-opus", ids) is None


async def test_openai_key_only_never_resolves_to_a_keyless_provider(workspace: Path) -> None:
    kernel = openai_only()
    async with kernel.running():
        assert (await kernel.resolve_model("gpt-4.1")).ref == "openai:gpt-4.1"
        with pytest.raises(ModelNeedsKey) as refused:
            await kernel.resolve_model("claude-sonnet-4")
        err = refused.value
        assert "anthropic:claude-sonnet-4-6" in err.candidates
        assert "openrouter:anthropic/claude-sonnet-4.6" in err.candidates
        assert err.keys == {"anthropic": "ANTHROPIC_API_KEY", "openrouter": "OPENROUTER_API_KEY"}
        assert "ANTHROPIC_API_KEY" in str(err) and "OPENROUTER_API_KEY" in str(err)
        assert isinstance(err, ModelNotFound)  # every surface already answers it as a bad value

        session = await kernel.open_session(source="cli", owner="t", cwd=workspace)
        for ref in ("claude-sonnet-4", "anthropic:claude-sonnet-4-6", "openrouter:openai/gpt-4.1"):
            with pytest.raises(ModelNeedsKey):
                await session.switch_model(ref)
            with pytest.raises(ModelNeedsKey):
                await session.switch_model(ref, scope="once")
        assert session.info().model == "openai:gpt-4.1-mini"
        assert session.once_model is None
        done = await session.switch_model("gpt-4.1")
        assert done.ref == "openai:gpt-4.1"


async def test_openrouter_key_only_resolves_inside_openrouter() -> None:
    kernel = openrouter_only()
    async with kernel.running():
        assert (await kernel.resolve_model("claude-sonnet-4")).ref == "openrouter:anthropic/claude-sonnet-4.6"
        assert (await kernel.resolve_model("gpt-4.1")).ref == "openrouter:openai/gpt-4.1"
        assert (await kernel.resolve_model("gpt-4.1-mini")).ref == "openrouter:openai/gpt-4.1-mini"
        assert (await kernel.resolve_model("claude-opus-4")).ref == "openrouter:anthropic/claude-opus-4.1"
        with pytest.raises(ModelNeedsKey) as refused:
            await kernel.resolve_model("gpt-5")  # only OpenAI itself lists it
        assert refused.value.candidates == ["openai:gpt-5"]
        assert refused.value.keys == {"openai": "OPENAI_API_KEY"}


async def test_a_runnable_provider_is_used_when_the_current_one_has_nothing(workspace: Path) -> None:
    kernel = make_kernel(
        entry_points=PLUGINS,
        settings={
            "model": "openai:gpt-4.1-mini",
            "providers": {"openai": {"api_key": "sk-openai"}, "anthropic": {"api_key": "sk-ant"}},
        },
    )
    async with kernel.running():
        # Anthropic has its key: its family member wins, OpenRouter (keyless) is not considered.
        assert (await kernel.resolve_model("claude-sonnet-4")).ref == "anthropic:claude-sonnet-4-6"


async def test_self_hosted_openai_url_lists_the_server_and_knows_the_current_model(
    self_hosted: FakeUpstream, workspace: Path
) -> None:
    kernel = self_hosted_kernel(self_hosted)
    async with kernel.running():
        session = await kernel.open_session(source="cli", owner="t", cwd=workspace)
        # A bare name asks the current user-defined endpoint for its list once.
        assert (
            await kernel.resolve_model("qwen3-coder-30b", session=session)
        ).ref == "openai:qwen3-coder-30b"
        assert (await kernel.resolve_model("gpt-4.1-mini")).ref == "openai:gpt-4.1-mini"
        assert len(self_hosted.requests) == 1
        catalog = await kernel.model_catalog(session=session)
        row = next(p for p in catalog["providers"] if p["slug"] == "openai")
        assert row["is_user_defined"] is True and row["probe"]["status"] == "live"
        assert row["models"] == ["gpt-4.1-mini", "qwen3-coder-30b"]
        assert row["base_url"] == f"{self_hosted.url}/v1"
        probe = self_hosted.requests[-1]
        assert (probe.method, probe.path) == ("GET", "/v1/models")
        assert probe.headers.get("Authorization") == "Bearer sk-local"
        assert (await kernel.resolve_model("qwen3-coder", session=session)).ref == "openai:qwen3-coder-30b"


async def test_official_openai_url_is_not_a_user_defined_endpoint() -> None:
    kernel = make_kernel(
        entry_points=PLUGINS,
        settings={
            "model": "openai:gpt-4.1-mini",
            "providers": {"openai": {"api_key": "sk-x", "base_url": "https://api.openai.com/v1/"}},
        },
    )
    async with kernel.running():
        catalog = await kernel.model_catalog(network=False)
        row = next(p for p in catalog["providers"] if p["slug"] == "openai")
        assert row["is_user_defined"] is False and row["probe"]["status"] == "skipped"


async def test_models_a_session_used_resolve_although_no_list_has_them(
    self_hosted: FakeUpstream, workspace: Path
) -> None:
    kernel: Any = self_hosted_kernel(self_hosted)
    async with kernel.running():
        session = await kernel.open_session(source="cli", owner="t", cwd=workspace)
        await session.switch_model("mock:alt")
        turn = await session.submit("hi", owner="t")
        assert (await turn.outcome).reason == "stop"
        # The default model (the one the session started on) is never listed offline here.
        assert (await session.switch_model("gpt-4.1-mini")).ref == "openai:gpt-4.1-mini"
        assert kernel.models.used_models(session) == ["openai:gpt-4.1-mini", "mock:alt"]
        assert self_hosted.requests == []  # resolving never waited on the network


async def test_a_dead_self_hosted_server_still_knows_the_current_model() -> None:
    kernel = make_kernel(
        entry_points=PLUGINS,
        settings={
            "model": "openai:gpt-4.1-mini",
            "providers": {"openai": {"api_key": "sk-x", "base_url": f"http://127.0.0.1:{closed_port()}/v1"}},
            "catalog": {"probe_timeout_s": 2},
        },
    )
    async with kernel.running():
        assert (await kernel.resolve_model("gpt-4.1-mini")).ref == "openai:gpt-4.1-mini"
        with pytest.raises(ModelNeedsKey):  # not served here; only keyless providers list it
            await kernel.resolve_model("claude-sonnet-4")
        row = next(
            p for p in (await kernel.model_catalog(network=False))["providers"] if p["slug"] == "openai"
        )
        assert row["probe"]["status"] == "skipped" and "error" in row["probe"]
        assert row["models"] == ["gpt-4.1-mini"]  # the current model is listed all the same
        live = await kernel.model_catalog()  # the normal open probes it again, and fails again
        row = next(p for p in live["providers"] if p["slug"] == "openai")
        assert row["probe"]["status"] == "failed" and row["models"] == ["gpt-4.1-mini"]
