"""An API request resolves its model once (docs/reference/api-server.md#model-selection): the
choice made while reading the body (`choose_model`) goes to the turn resolved, and neither the
image check, `Session.submit` nor the turn's start resolves the same reference again. The turn
runs on the model the request named."""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import hermes_core.model_resolve as model_resolve
from hermes_api_server.model_select import choose_model
from hermes_api_server.settings import ApiSettings
from hermes_api_server.turns import image_warning, submit_turn
from hermes_core import ChatRequest, ImagePart, TextPart
from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every reference the core's resolver is asked about, in order."""
    asked: list[str] = []
    real = model_resolve.resolve

    async def counting(hub: Any, aliases: Any, ref: str, *args: Any, **kwargs: Any) -> Any:
        asked.append(ref)
        return await real(hub, aliases, ref, *args, **kwargs)

    monkeypatch.setattr(model_resolve, "resolve", counting)
    return asked


@pytest.mark.parametrize(
    ("body", "settings", "model_id"),
    [
        ({"model": "fake:other"}, {}, "other"),
        ({"model": "other", "provider": "fake"}, {}, "other"),
        ({"model": "fast"}, {"model_aliases": {"fast": "fake:other"}}, "other"),
        ({"model": "other"}, {"direct_model_requests": True}, "other"),
    ],
    ids=["qualified", "provider-field", "alias", "bare-name"],
)
async def test_a_request_resolves_its_model_once(
    counted: list[str], body: dict[str, Any], settings: dict[str, Any], model_id: str
) -> None:
    seen: list[ChatRequest] = []

    def answer(request: ChatRequest) -> list[Any]:
        from hermes_core import FinishChunk, TextChunk

        seen.append(request)
        return [TextChunk("ok"), FinishChunk("stop")]

    provider = FakeProvider(answer, models=("model", "other"))
    kernel = make_kernel(FakeProviderPlugin(provider), settings={"model": "fake:model"})
    async with kernel.running():
        counted.clear()  # what starting the kernel resolved is not the request's
        choice = await choose_model(kernel, ApiSettings(**settings), body, always_resolve=False)
        session = await kernel.open_session(None, source="api", owner="p1", cwd=Path(tempfile.gettempdir()))
        parts = [TextPart("look"), ImagePart(mime="image/png", data=b"\x89PNG")]
        model_ref, _ = choice.resolved_for(session)
        await image_warning(kernel, getattr(choice, "resolved", None) or model_ref, parts)
        turn = await submit_turn(session, SimpleNamespace(parts=parts), choice, "p1")  # type: ignore[arg-type]
        outcome = await turn.outcome
        await session.close()
    assert outcome.status == "complete"
    assert [r.model for r in seen] == [model_id]
    assert len(counted) == 1, counted
