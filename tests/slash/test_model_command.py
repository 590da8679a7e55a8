"""``/model``: show the choices, switch per session, for one turn or globally; bad refs change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core import (
    CommandUsageError,
    InvalidValue,
    Kernel,
    ModelAmbiguous,
    ModelNotFound,
    ProviderSpec,
    Session,
    SessionBusy,
    hookimpl,
)
from hermes_core.testing import FakeProvider, FakeProviderPlugin, MemorySettingsStore, make_kernel

from .conftest import ALL_PLUGINS
from .helpers import data, reply, run, start_slow_turn


async def test_bare_model_shows_current_model_and_choices(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "/model")
    assert result.output is not None
    assert result.output.startswith("Current model: mock:echo")
    assert "echo, script, alt, history" in result.output
    assert "/model PROVIDER:MODEL" in result.output
    info = data(result)
    assert (info["model"], info["provider"]) == ("mock:echo", "mock")
    mock = next(p for p in info["catalog"]["providers"] if p["slug"] == "mock")
    assert mock["is_current"] and set(mock["models"]) >= {"echo", "alt", "history"}


async def test_switch_applies_from_next_turn_persists_and_leaves_a_hidden_marker(
    kernel: Kernel, session: Session
) -> None:
    assert await reply(session, "hello") == "You said: hello"
    result = await run(kernel, session, "/model mock:alt")
    assert result.output == "Model switched to mock:alt (this session)"
    assert data(result)["previous"] == "mock:echo"
    assert session.record.model == "mock:alt"
    assert session.info().model_source == "session"
    assert await reply(session, "again") == "alt: You said: again"
    assert await reply(session, "and again") == "alt: You said: and again"

    stored = await kernel.storage.load_rows(session.id)
    markers = [r for r in stored if r.display_kind == "model_switch"]
    assert len(markers) == 1 and markers[0].id == data(result)["marker_row_id"]
    assert all(r.display_kind != "model_switch" for r in await session.history())
    record = await kernel.storage.get_session(session.id)
    assert record is not None and record.model == "mock:alt"


async def test_bare_name_resolves_against_the_current_provider(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "/model history")
    assert result.output == "Model switched to mock:history (this session)"
    await reply(session, "one")
    assert await reply(session, "two") == "Turns: one | two"


@pytest.mark.parametrize("ref", ["nonsense", "mock:nonsense", "nope:thing"])
async def test_unknown_model_raises_and_changes_nothing(kernel: Kernel, session: Session, ref: str) -> None:
    await reply(session, "hello")
    rows_before = await kernel.storage.load_rows(session.id)
    with pytest.raises(ModelNotFound) as caught:
        await kernel.dispatch_slash(session, f"/model {ref}", surface="tui")
    if ref.startswith("mock:"):
        assert "mock:echo" in caught.value.candidates
    assert session.record.model is None
    assert await kernel.storage.load_rows(session.id) == rows_before
    assert await reply(session, "still echo") == "You said: still echo"


async def test_ambiguous_model_lists_candidates_and_changes_nothing(workspace: Path) -> None:
    plugins = [FakeProviderPlugin(FakeProvider(models=["shared"]), name=n) for n in ("fa", "fb")]
    k = make_kernel(*plugins, entry_points=ALL_PLUGINS, settings={"model": "mock:echo"})
    async with k.running():
        session = await k.open_session(source="cli", owner="t", cwd=workspace)
        with pytest.raises(ModelAmbiguous) as caught:
            await k.dispatch_slash(session, "/model shared", surface="tui")
        assert sorted(caught.value.candidates) == ["fa:shared", "fb:shared"]
        assert session.info().model == "mock:echo" and session.record.model is None
        result = await run(k, session, "/model fb:shared")
        assert result.output == "Model switched to fb:shared (this session)"
        assert await reply(session, "hi") == "ok"


async def test_once_switches_exactly_one_turn(kernel: Kernel, session: Session) -> None:
    await reply(session, "first")
    result = await run(kernel, session, "/model --once mock:alt")
    assert result.output == "Model switched to mock:alt (next turn only)"
    assert data(result)["scope"] == "once"
    assert await reply(session, "second") == "alt: You said: second"
    assert await reply(session, "third") == "You said: third"
    assert session.record.model is None
    rows = await kernel.storage.load_rows(session.id)
    assert all(r.display_kind != "model_switch" for r in rows)


async def test_flag_may_follow_the_reference(kernel: Kernel, session: Session) -> None:
    result = await run(kernel, session, "/model mock:alt --once")
    assert data(result)["scope"] == "once"


async def test_global_writes_the_model_setting(workspace: Path) -> None:
    store = MemorySettingsStore({"model": "mock:echo"})
    k = make_kernel(entry_points=ALL_PLUGINS, settings={"model": "mock:echo"}, store=store)
    async with k.running():
        session = await k.open_session(source="cli", owner="t", cwd=workspace)
        result = await run(k, session, "/model --global mock:alt")
        assert result.output is not None
        assert result.output.startswith("Model switched to mock:alt (this session, and saved as the default")
        assert store.get("model") == "mock:alt"
        assert session.record.model == "mock:alt"
        assert await reply(session, "hi") == "alt: You said: hi"


async def test_global_without_a_settings_store_is_refused_and_changes_nothing(
    kernel: Kernel, session: Session
) -> None:
    with pytest.raises(InvalidValue):
        await kernel.dispatch_slash(session, "/model --global mock:alt", surface="tui")
    assert session.record.model is None
    assert await reply(session, "hi") == "You said: hi"


@pytest.mark.parametrize(
    "args",
    [
        "--once",
        "--global",
        "--once --global mock:alt",
        "--fast mock:alt",
        "mock:alt mock:echo",
        "-g mock:alt",
    ],
)
async def test_bad_arguments_raise_usage_errors(kernel: Kernel, session: Session, args: str) -> None:
    with pytest.raises(CommandUsageError) as caught:
        await kernel.dispatch_slash(session, f"/model {args}", surface="tui")
    assert caught.value.usage.startswith("/model ")
    assert "usage: /model" in str(caught.value)
    assert session.record.model is None


async def test_model_is_refused_while_a_turn_runs(kernel: Kernel, session: Session) -> None:
    turn = await start_slow_turn(session)
    with pytest.raises(SessionBusy):
        await kernel.dispatch_slash(session, "/model mock:alt", surface="tui")
    await session.interrupt(discard_queue=True)
    await turn.outcome
    assert session.record.model is None
    assert await reply(session, "after") == "You said: after"


class OpenListProvider:
    """A plugin whose provider accepts model names it does not list."""

    hermes_plugin_name = "open-provider"

    @hookimpl
    def hermes_model_providers(self) -> ProviderSpec:
        provider = FakeProvider(models=["listed"])
        return ProviderSpec(
            name="open", summary="open list", factory=lambda settings, **kw: provider, requires_key=False
        )


async def test_unlisted_model_of_an_open_provider_is_switched_with_a_note(workspace: Path) -> None:
    k = make_kernel(OpenListProvider(), entry_points=ALL_PLUGINS, settings={"model": "mock:echo"})
    async with k.running():
        session = await k.open_session(source="cli", owner="t", cwd=workspace)
        result = await run(k, session, "/model open:brand-new")
        assert result.output is not None
        first, note = result.output.splitlines()
        assert first == "Model switched to open:brand-new (this session)"
        assert "'brand-new' is not in open's model list" in note
        listed = await run(k, session, "/model open:listed")
        assert listed.output == "Model switched to open:listed (this session)"


async def test_session_switch_survives_closing_and_resuming(kernel: Kernel, session: Session) -> None:
    await reply(session, "hello")
    await run(kernel, session, "/model mock:alt")
    session_id = session.id
    await session.close()
    resumed = await kernel.sessions.resume(session_id, owner="t")
    assert resumed.info().model == "mock:alt"
    shown = (await run(kernel, resumed, "/model")).output or ""
    assert shown.startswith("Current model: mock:alt (chosen for this session)")
    assert await reply(resumed, "back") == "alt: You said: back"


async def test_global_switch_is_the_default_for_sessions_opened_afterwards(workspace: Path) -> None:
    store = MemorySettingsStore({"model": "mock:echo"})
    k = make_kernel(entry_points=ALL_PLUGINS, settings={"model": "mock:echo"}, store=store)
    async with k.running():
        first = await k.open_session(source="tui", owner="t", cwd=workspace)
        await run(k, first, "/model --global mock:alt")
        later = await k.open_session(source="tui", owner="t", cwd=workspace)
        assert later.info().model == "mock:alt"


async def test_an_alias_from_model_aliases_switches(workspace: Path) -> None:
    k = make_kernel(
        entry_points=ALL_PLUGINS, settings={"model": "mock:echo", "model_aliases": {"quick": "mock:alt"}}
    )
    async with k.running():
        session = await k.open_session(source="tui", owner="t", cwd=workspace)
        result = await run(k, session, "/model quick")
        assert result.output == "Model switched to mock:alt (resolved from quick; this session)"
        assert session.info().model == "mock:alt"
        assert await reply(session, "hi") == "alt: You said: hi"


async def test_family_name_resolves_to_the_newest_claude_and_says_so(workspace: Path) -> None:
    """The seed's own ``/model claude-sonnet-4``: the newest claude-sonnet-4* id, named in the answer."""
    from hermes_anthropic.catalog import CLAUDE_MODELS
    from hermes_core.model_family import newest
    from tests.providers.upstream_fakes import FakeUpstream
    from tests.providers.vendors import text_reply

    expected, _ = newest("claude-sonnet-4", [m.id for m in CLAUDE_MODELS])
    assert expected is not None and expected.startswith("claude-sonnet-4-")
    async with FakeUpstream() as upstream:
        upstream.stream("/v1/messages", text_reply("hi from claude"))
        k = make_kernel(
            entry_points=[*ALL_PLUGINS, "anthropic"],
            settings={
                "model": "mock:echo",
                "providers": {"anthropic": {"base_url": upstream.url, "api_key": "sk-ant-test"}},
            },
        )
        async with k.running():
            session = await k.open_session(source="cli", owner="t", cwd=workspace)
            result = await run(k, session, "/model claude-sonnet-4")
            assert result.output == (
                f"Model switched to anthropic:{expected} (resolved from claude-sonnet-4; this session)"
            )
            assert data(result)["resolved_from"] == "claude-sonnet-4"
            assert session.record.model == f"anthropic:{expected}"
            assert await reply(session, "hello") == "hi from claude"
        sent = upstream.last()
        assert sent.path == "/v1/messages" and sent.body["model"] == expected
