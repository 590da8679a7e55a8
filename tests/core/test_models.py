"""The resolver, the switcher's validation and the catalog's probe policy
(docs/reference/core.md#providers-and-models)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hermes_core import ConfigError, ModelAmbiguous, ModelNotFound
from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel


def two_fakes() -> Any:
    return make_kernel(
        FakeProviderPlugin(FakeProvider(models=("shared", "only-a")), name="alpha"),
        FakeProviderPlugin(FakeProvider(models=("shared", "only-b")), name="beta"),
        settings={"model": "alpha:shared", "model_aliases": {"fast": "beta:only-b"}},
    )


async def test_explicit_provider_prefix() -> None:
    kernel = two_fakes()
    async with kernel.running():
        assert (await kernel.resolve_model("beta:shared")).ref == "beta:shared"
        with pytest.raises(ModelNotFound) as err:
            await kernel.resolve_model("beta:only-a")
        assert "beta:only-b" in err.value.candidates or err.value.candidates


async def test_bare_name_prefers_current_provider_then_aliases_then_unique_match() -> None:
    kernel = two_fakes()
    async with kernel.running():
        assert (await kernel.resolve_model("shared")).ref == "alpha:shared"  # current provider first
        assert (await kernel.resolve_model("fast")).ref == "beta:only-b"  # alias
        assert (await kernel.resolve_model("only-b")).ref == "beta:only-b"  # unique match
        with pytest.raises(ModelNotFound) as err:
            await kernel.resolve_model("only-c")
        assert any("only" in c for c in err.value.candidates)


async def test_ambiguous_bare_name_lists_candidates(workspace: Path) -> None:
    kernel = make_kernel(
        FakeProviderPlugin(FakeProvider(models=("shared",)), name="alpha"),
        FakeProviderPlugin(FakeProvider(models=("shared",)), name="beta"),
        FakeProviderPlugin(FakeProvider(models=("other",)), name="gamma"),
        settings={"model": "gamma:other"},
    )
    async with kernel.running():
        with pytest.raises(ModelAmbiguous) as err:
            await kernel.resolve_model("shared")
        assert sorted(err.value.candidates) == ["alpha:shared", "beta:shared"]


async def test_unresolvable_configured_model_is_a_start_up_error() -> None:
    kernel = make_kernel(entry_points=["mock"], settings={"model": "mock:nope"})
    with pytest.raises(ModelNotFound) as err:
        async with kernel.running():
            pass
    assert "mock:echo" in err.value.candidates or err.value.candidates


async def test_no_provider_at_all_is_a_clear_start_up_error() -> None:
    kernel = make_kernel(entry_points=False)
    with pytest.raises(ConfigError, match="no model provider configured"):
        async with kernel.running():
            pass


async def test_fallback_is_mock_echo_and_not_usable() -> None:
    kernel = make_kernel(entry_points=["mock"])
    async with kernel.running():
        assert kernel.default_model == "mock:echo"
        assert kernel.models.has_usable_provider() is False
    explicit = make_kernel(entry_points=["mock"], settings={"model": "mock:script"})
    async with explicit.running():
        assert explicit.models.has_usable_provider() is True


async def test_without_the_fallback_no_model_means_none() -> None:
    kernel = make_kernel(entry_points=["mock"], settings={"model_fallback": False})
    async with kernel.running():
        assert kernel.default_model is None
        assert kernel.models.has_usable_provider() is False
        status = kernel.model_status()
        assert status.model is None and not status.fallback


@pytest.fixture
async def live_endpoint() -> AsyncIterator[str]:
    hits: list[str] = []

    async def models(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.json_response({"object": "list", "data": [{"id": "local-7b"}, {"id": "local-70b"}]})

    app = web.Application()
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://user:pw@127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


def dead_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/v1"


async def test_catalog_probe_policy_with_live_and_dead_custom_providers(live_endpoint: str) -> None:
    kernel = make_kernel(
        entry_points=["mock", "openai"],
        settings={
            "model": "live:local-7b",
            "providers": {
                "custom": [
                    {"name": "live", "base_url": live_endpoint},
                    {"name": "dead", "base_url": dead_url()},
                ]
            },
            "catalog": {"probe_timeout_s": 2},
        },
    )
    async with kernel.running():
        normal = await kernel.model_catalog()
        rows = {p["slug"]: p for p in normal["providers"]}
        assert normal["provider"] == "live" and normal["model"] == "local-7b"
        assert rows["live"]["probe"]["status"] == "live" and rows["live"]["is_current"]
        assert rows["live"]["models"] == ["local-7b", "local-70b"]
        assert (
            rows["live"]["base_url"].startswith("http://127.0.0.1:") and "pw" not in rows["live"]["base_url"]
        )
        assert rows["dead"]["probe"]["status"] == "skipped"  # not current: not probed on a normal open
        assert rows["mock"]["probe"]["status"] == "skipped" and rows["mock"]["is_user_defined"] is False
        assert "fetched_at" in rows["live"]["probe"]
        refreshed = await kernel.model_catalog(refresh=True)
        rows = {p["slug"]: p for p in refreshed["providers"]}
        assert refreshed["refreshed"] is True
        assert rows["live"]["probe"]["status"] == "live"
        assert rows["dead"]["probe"]["status"] == "failed" and rows["dead"]["probe"]["error"]
        offline = await kernel.model_catalog(network=False)
        assert {p["slug"]: p for p in offline["providers"]}["live"]["probe"]["status"] == "cached"


async def test_custom_provider_name_clash_is_a_start_up_error() -> None:
    kernel = make_kernel(
        entry_points=["mock", "openai"],
        settings={"providers": {"custom": [{"name": "mock", "base_url": "http://127.0.0.1:9/v1"}]}},
    )
    with pytest.raises(ConfigError, match="clashes"):
        async with kernel.running():
            pass


async def test_a_provider_without_its_key_fails_the_turn_naming_the_variable(workspace: Path) -> None:
    kernel = make_kernel(entry_points=["mock", "openai"], settings={"model": "openai:gpt-4.1-mini"})
    async with kernel.running():
        session = await kernel.open_session(source="cli", owner="t", cwd=workspace)
        turn = await session.submit("hi", owner="t")
        outcome = await turn.outcome
        assert (outcome.status, outcome.reason) == ("error", "agent_build")
        assert "OPENAI_API_KEY" in (outcome.message or "")


def family_kernel(current: str = "mock:echo") -> Any:
    return make_kernel(
        FakeProviderPlugin(
            FakeProvider(
                models=(
                    "claude-sonnet-4-20250514",
                    "claude-sonnet-4-5",
                    "claude-sonnet-4-5-20250929",
                    "claude-opus-4-1",
                    "claude-haiku-4-5",
                    "claude-haiku-4.5",
                )
            ),
            name="claudes",
        ),
        FakeProviderPlugin(FakeProvider(models=("gpt-4.1", "gpt-4.1-mini", "gpt-4o")), name="gpts"),
        FakeProviderPlugin(FakeProvider(models=("gpt-4.1-nano", "m-2", "m-10")), name="others"),
        entry_points=["mock"],
        settings={"model": current},
    )


async def test_family_name_picks_the_newest_matching_id() -> None:
    kernel = family_kernel()
    async with kernel.running():
        # The newest version wins over an older dated id; the dated twin of the same version wins
        # over the undated one (a date only breaks ties).
        assert (await kernel.resolve_model("claude-sonnet-4")).ref == "claudes:claude-sonnet-4-5-20250929"
        assert (await kernel.resolve_model("claude-sonnet")).ref == "claudes:claude-sonnet-4-5-20250929"
        assert (await kernel.resolve_model("claude-opus")).ref == "claudes:claude-opus-4-1"
        assert (await kernel.resolve_model("m")).ref == "others:m-10"  # numbers compare as numbers
        assert (await kernel.resolve_model("gpt-4.1")).ref == "gpts:gpt-4.1"  # an exact id is exact


async def test_family_ties_and_variants_list_candidates() -> None:
    kernel = family_kernel()
    async with kernel.running():
        with pytest.raises(ModelAmbiguous) as tie:
            await kernel.resolve_model("claude-haiku")  # 4-5 and 4.5: the same version twice
        assert sorted(tie.value.candidates) == ["claudes:claude-haiku-4-5", "claudes:claude-haiku-4.5"]
        with pytest.raises(ModelAmbiguous) as variants:
            await kernel.resolve_model("claude")  # only variants (sonnet, opus, haiku) match
        assert "claudes:claude-opus-4-1" in variants.value.candidates
        with pytest.raises(ModelNotFound):
            await kernel.resolve_model("gpt-4.1-n")  # no separator after the name: not a family
        with pytest.raises(ModelAmbiguous) as across:
            await kernel.resolve_model("gpt")  # two providers each have a family member
        assert "gpts:gpt-4o" not in across.value.candidates
        assert "others:gpt-4.1-nano" in across.value.candidates


async def test_family_resolution_prefers_the_current_provider() -> None:
    kernel = family_kernel(current="others:m-2")
    async with kernel.running():
        # The current provider is searched first, family members included: its only gpt-4.1
        # member wins over another provider's exact id.
        assert (await kernel.resolve_model("gpt-4.1")).ref == "others:gpt-4.1-nano"
        assert (await kernel.resolve_model("gpt")).ref == "others:gpt-4.1-nano"
        # A name the current provider has nothing for is looked up in the others.
        assert (await kernel.resolve_model("gpt-4o")).ref == "gpts:gpt-4o"


async def test_unknown_name_suggests_ids_that_contain_it() -> None:
    kernel = family_kernel()
    async with kernel.running():
        with pytest.raises(ModelNotFound) as err:
            await kernel.resolve_model("sonnet")
        assert "claudes:claude-sonnet-4-5" in err.value.candidates
