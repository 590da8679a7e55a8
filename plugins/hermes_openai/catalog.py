"""Offline model knowledge: OpenAI's own models, ``/models`` parsing and list merging."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hermes_core import ModelInfo

# A short list of current OpenAI chat models, so bare names resolve without the network.
OPENAI_MODELS: tuple[ModelInfo, ...] = (
    ModelInfo("gpt-5", 400_000, True),
    ModelInfo("gpt-5-mini", 400_000, True),
    ModelInfo("gpt-5-nano", 400_000, True),
    ModelInfo("gpt-4.1", 1_047_576, True),
    ModelInfo("gpt-4.1-mini", 1_047_576, True),
    ModelInfo("gpt-4.1-nano", 1_047_576, True),
    ModelInfo("gpt-4o", 128_000, True),
    ModelInfo("gpt-4o-mini", 128_000, True),
    ModelInfo("o3", 200_000, True),
    ModelInfo("o4-mini", 200_000, True),
)

# Model families on api.openai.com that cannot chat; hidden from probe results.
_NOT_CHAT = (
    "text-embedding",
    "whisper",
    "tts",
    "dall-e",
    "omni-moderation",
    "babbage",
    "davinci",
    "gpt-image",
)

_WINDOW_KEYS = ("context_window", "context_length", "max_model_len", "max_context_length")


def parse_models(payload: Any, *, official: bool) -> list[ModelInfo]:
    """Return the models of a ``GET /models`` answer.

    Reads OpenAI's ``{"data": [{"id": …}]}`` and the extras other servers add: OpenRouter's
    ``context_length`` and ``architecture.input_modalities``, vLLM's ``max_model_len``.

    :param payload: the decoded JSON answer.
    :param official: whether this is api.openai.com (known models get their static details).
    :returns: models in the upstream's order, without duplicates.
    :raises ValueError: when the answer has no model list.
    """
    if isinstance(payload, dict):
        entries = payload.get("data", payload.get("models"))
    else:
        entries = payload
    if not isinstance(entries, list):
        raise ValueError("the answer has no model list")
    known = {m.id: m for m in OPENAI_MODELS} if official else {}
    models: list[ModelInfo] = []
    for entry in entries:
        model = _entry_model(entry)
        if model is None:
            continue
        if official and model.id.startswith(_NOT_CHAT):
            continue
        models.append(known.get(model.id, model))
    return merge_models(models)


def _entry_model(entry: Any) -> ModelInfo | None:
    if isinstance(entry, str):
        return ModelInfo(entry)
    if not isinstance(entry, dict):
        return None
    model_id = entry.get("id") or entry.get("name") or entry.get("model")
    if not isinstance(model_id, str) or not model_id:
        return None
    window = None
    for key in _WINDOW_KEYS:
        value = entry.get(key)
        if isinstance(value, int) and value > 0:
            window = value
            break
    return ModelInfo(model_id, window, _has_vision(entry))


def _has_vision(entry: dict[str, Any]) -> bool:
    architecture = entry.get("architecture")
    if isinstance(architecture, dict):
        modalities = architecture.get("input_modalities")
        if isinstance(modalities, list) and "image" in modalities:
            return True
    for key in ("capabilities", "modalities", "input_modalities"):
        value = entry.get(key)
        if isinstance(value, list) and ("vision" in value or "image" in value):
            return True
    return entry.get("vision") is True


def merge_models(*lists: Iterable[ModelInfo]) -> list[ModelInfo]:
    """Merge model lists, keeping the first entry per id and filling in missing details."""
    merged: dict[str, ModelInfo] = {}
    for models in lists:
        for model in models:
            seen = merged.get(model.id)
            if seen is None:
                merged[model.id] = model
            elif seen.context_window is None and model.context_window is not None:
                merged[model.id] = ModelInfo(seen.id, model.context_window, seen.vision or model.vision)
    return list(merged.values())
