"""Render the model catalog as the readable text ``/model`` shows with no arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_MODELS_SHOWN = 20
SOURCE_WORDS = {
    "session": "chosen for this session",
    "fallback": "offline fallback: no model is configured",
    "flag": "from --model",
    "env": "from HERMES_MODEL",
    "config": "from config.toml",
    "default": "the default",
}


def describe_source(source: str) -> str:
    """Say in words where the current model came from.

    :param source: ``SessionInfo.model_source``.
    :returns: a short phrase.
    """
    return SOURCE_WORDS.get(source, source)


def _provider_block(entry: Mapping[str, Any]) -> list[str]:
    slug = str(entry.get("slug", "?"))
    name = str(entry.get("name") or slug)
    marks: list[str] = []
    if entry.get("is_current"):
        marks.append("current")
    if not entry.get("authenticated", True):
        marks.append("no credentials")
    if entry.get("is_user_defined"):
        marks.append("custom")
    heading = (
        f"  {slug}" + (f" — {name}" if name != slug else "") + (f" ({', '.join(marks)})" if marks else "")
    )
    models = [str(m) for m in entry.get("models") or []]
    if not models:
        return [heading, f"    no models listed; use {slug}:MODEL"]
    shown = ", ".join(models[:MAX_MODELS_SHOWN])
    more = len(models) - MAX_MODELS_SHOWN
    return [heading, f"    {shown}" + (f" … and {more} more" if more > 0 else "")]


def render_choices(model: str | None, source: str, catalog: Mapping[str, Any]) -> str:
    """Format the current model and every provider's offline model list.

    :param model: the session's current ``provider:model`` reference, if any.
    :param source: where that model came from (``SessionInfo.model_source``).
    :param catalog: the payload of ``Kernel.model_catalog``.
    :returns: several lines of text, no trailing newline.
    """
    lines = [f"Current model: {model} ({describe_source(source)})" if model else "Current model: none"]
    providers = list(catalog.get("providers") or [])
    if providers:
        lines.append("Available models:")
        for entry in providers:
            lines.extend(_provider_block(entry))
    else:
        lines.append("No model providers are loaded.")
    lines.append(
        "Switch with /model PROVIDER:MODEL; add --once for the next turn only, "
        "or --global to also save it as the default."
    )
    return "\n".join(lines)
