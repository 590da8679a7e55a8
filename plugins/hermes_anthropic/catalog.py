"""Offline model knowledge for Claude: the built-in list and ``/v1/models`` parsing."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hermes_core import ModelInfo

CLAUDE_WINDOW = 200_000

# Current Claude models; every one takes images and has a 200k-token window.
CLAUDE_MODELS: tuple[ModelInfo, ...] = tuple(
    ModelInfo(model_id, CLAUDE_WINDOW, True)
    for model_id in (
        "claude-sonnet-4-6",
        "claude-opus-4-5",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
        "claude-opus-4-1",
        "claude-opus-4-0",
        "claude-sonnet-4-0",
        "claude-3-7-sonnet-latest",
        "claude-3-5-haiku-latest",
    )
)


def parse_models(payload: Any) -> list[ModelInfo]:
    """Return the models of a ``GET /v1/models`` answer (``{"data": [{"id": …}]}``).

    :raises ValueError: when the answer has no model list.
    """
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        raise ValueError("the answer has no model list")
    models: list[ModelInfo] = []
    for entry in entries:
        model_id = entry.get("id") if isinstance(entry, dict) else None
        if isinstance(model_id, str) and model_id:
            models.append(ModelInfo(model_id, CLAUDE_WINDOW, True))
    return merge_models(models)


def merge_models(*lists: Iterable[ModelInfo]) -> list[ModelInfo]:
    """Merge model lists, keeping the first entry per id."""
    merged: dict[str, ModelInfo] = {}
    for models in lists:
        for model in models:
            merged.setdefault(model.id, model)
    return list(merged.values())
