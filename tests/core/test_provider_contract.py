"""The provider contract's edges (docs/writing-providers.md): a value that is no chunk fails the
call visibly, and ``ProviderBase`` supplies listing, probing and closing from one ``models``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core import (
    ChatRequest,
    Chunk,
    FinishChunk,
    ModelInfo,
    ProviderBase,
    ProviderError,
    ProviderSpec,
    SeedMessage,
    TextChunk,
    TurnCompleted,
    hookimpl,
)
from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel
from tests.core.conftest import collect


def yields_text_directly(_request: ChatRequest) -> Iterator[Any]:
    yield TextChunk("fine so far ")
    yield "and then a bare string"  # the classic mistake: text instead of TextChunk(text)
    yield FinishChunk("stop")


async def test_a_value_that_is_no_chunk_fails_the_turn_with_a_clear_message(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kernel = make_kernel(
        FakeProviderPlugin(FakeProvider(yields_text_directly)),
        settings={"model": "fake:model", "agent": {"provider_retries": 2}},
    )
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=workspace)
        with caplog.at_level(logging.ERROR, logger="hermes.providers"):
            events = await collect(await session.submit("hi", owner="t"))
    done = events[-1]
    assert isinstance(done, TurnCompleted)
    outcome = done.outcome
    assert (outcome.status, outcome.reason, outcome.layer) == ("error", "provider_error", "provider")
    assert outcome.partial and not outcome.retryable
    assert outcome.message is not None
    assert "provider 'fake' yielded a str, which is not a chunk" in outcome.message
    assert "wrap text as TextChunk(text)" in outcome.message
    assert done.text == "fine so far "
    assert any("not a chunk" in r.getMessage() for r in caplog.records)


async def test_a_title_or_summary_call_fails_too_instead_of_dropping_the_value(workspace: Path) -> None:
    def script(_request: ChatRequest) -> Iterator[Any]:
        yield {"text": "a dict is no chunk either"}

    kernel = make_kernel(FakeProviderPlugin(FakeProvider(script)), settings={"model": "fake:model"})
    async with kernel.running():
        with pytest.raises(ProviderError, match="yielded a dict, which is not a chunk") as info:
            await kernel.models.one_shot([SeedMessage("user", "hi")], purpose="title")
    assert info.value.kind == "upstream"


class Static(ProviderBase):
    """A provider written on the base class: one models declaration and a stream."""

    models = (ModelInfo("small", context_window=4096), ModelInfo("big", context_window=65536, vision=True))

    async def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        yield TextChunk(f"{request.model} says hi")
        yield FinishChunk("stop")


class StaticPlugin:
    @hookimpl
    def hermes_model_providers(self) -> ProviderSpec:
        return ProviderSpec(
            name="static", summary="static", factory=lambda settings, **kw: Static(), requires_key=False
        )


async def test_provider_base_lists_probes_and_closes_from_one_declaration() -> None:
    provider = Static()
    listed = await provider.list_models()
    assert [m.id for m in listed] == ["small", "big"]
    listed.clear()  # a fresh list each time: the declaration is never changed through it
    assert await provider.probe(1.0) == list(Static.models)
    await provider.aclose()  # nothing to release, and no error


async def test_provider_base_without_stream_says_what_is_missing() -> None:
    class Nothing(ProviderBase):
        pass

    with pytest.raises(NotImplementedError, match="Nothing must implement stream"):
        Nothing().stream(ChatRequest(model="x", messages=()))


async def test_a_provider_base_subclass_answers_turns_and_fills_the_catalog(workspace: Path) -> None:
    kernel = make_kernel(StaticPlugin(), settings={"model": "static:big"})
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=workspace)
        events = await collect(await session.submit("hi", owner="t"))
        catalog = await kernel.model_catalog()
    assert events[-1].text == "big says hi"
    row = next(p for p in catalog["providers"] if p["slug"] == "static")
    assert row["models"] == ["small", "big"]
    assert row["model_details"]["big"] == {"context_window": 65536, "vision": True}
    assert (row["requires_key"], row["authenticated"]) == (False, True)
