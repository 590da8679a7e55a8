"""Modes, config options and the legacy ``models`` object of a session
(docs/reference/acp.md#modes-config-options-and-models)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import ModelRef

if TYPE_CHECKING:
    from hermes_core import Kernel, Session

MODES: tuple[tuple[str, str], ...] = (
    ("default", "Default"),
    ("accept_edits", "Auto-approve edits"),
    ("ask_everything", "Ask every time"),
)
OFF_MODE = ("off", "Never ask")
MAX_MODELS = 200


def mode_choices(current: str) -> list[tuple[str, str]]:
    """Return the modes to offer; ``off`` only while it is the current profile (docs/reference/acp.md#modes).

    :param current: the session's approval profile.
    :returns: ``(id, name)`` pairs.
    """
    return [*MODES, OFF_MODE] if current == "off" else list(MODES)


def modes_state(session: Session) -> dict[str, Any]:
    """Return the ``modes`` object of a session response.

    :param session: the core session.
    :returns: ``{currentModeId, availableModes}``.
    """
    return {
        "currentModeId": session.profile,
        "availableModes": [{"id": i, "name": n} for i, n in mode_choices(session.profile)],
    }


async def model_choices(kernel: Kernel, session: Session) -> tuple[str, list[tuple[str, str]]]:
    """Return the current model and the offered ``(value, name)`` pairs, offline only.

    :param kernel: the kernel.
    :param session: the core session.
    :returns: the current ``provider:model`` and at most :data:`MAX_MODELS` choices.
    """
    current, choices, _ = await model_state(kernel, session)
    return current, choices


async def model_state(kernel: Kernel, session: Session) -> tuple[str, list[tuple[str, str]], int | None]:
    """Return the current model, the choices and the current model's context window.

    :param kernel: the kernel.
    :param session: the core session.
    :returns: ``(current, choices, window)``; the window is ``None`` when unknown.
    """
    current = session.info().model or ""
    now = ModelRef.split(current)
    provider_now, model_now = now.provider, now.model
    directory = kernel.providers
    window: int | None = None
    choices: list[tuple[str, str]] = []
    seen: set[str] = set()
    for slug in directory.names():
        # A provider without its key is not offered, so it is not even built: listing it
        # would import its HTTP code and validate its settings for nothing.
        if slug != provider_now and directory.missing_key_hint(slug) is not None:
            continue
        models = await directory.offline_models(slug)
        if slug == provider_now:
            size = next((m.context_window for m in models if m.id == model_now), None)
            window = size if isinstance(size, int) and size > 0 else None
        for model in models:
            value = f"{slug}:{model.id}"
            if value not in seen:
                seen.add(value)
                choices.append((value, f"{model.id} ({slug})"))
    # The current model and every model the session can go back to come first, so a session
    # can always pick again what ran in it, even on a server whose list was never fetched.
    pinned: list[tuple[str, str]] = []
    for used in filter(None, [current, *kernel.models.used_models(session)]):
        ref = ModelRef.split(used)
        usable = used == current or (
            ref.provider is not None
            and directory.has(ref.provider)
            and directory.missing_key_hint(ref.provider) is None
        )
        if usable and used not in seen:
            seen.add(used)
            pinned.append((used, f"{ref.model} ({ref.provider})"))
    return current, [*pinned, *choices][:MAX_MODELS], window


async def session_options(kernel: Kernel, session: Session) -> tuple[dict[str, Any], int | None]:
    """Return ``modes``, ``configOptions`` and ``models`` for a session response.

    :param kernel: the kernel.
    :param session: the core session.
    :returns: the three members (ready to merge into a result) and the model's context window.
    """
    current, choices, window = await model_state(kernel, session)
    return {
        "modes": modes_state(session),
        "configOptions": config_options(session.profile, current, choices),
        "models": {
            "currentModelId": current,
            "availableModels": [{"modelId": v, "name": n} for v, n in choices],
        },
    }, window


def config_options(profile: str, model: str, choices: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Return the ``[mode, model]`` config options.

    :param profile: the current approval profile.
    :param model: the current model reference.
    :param choices: the model choices.
    :returns: the list of two select options.
    """
    return [
        {
            "id": "mode",
            "name": "Mode",
            "category": "mode",
            "type": "select",
            "currentValue": profile,
            "options": [{"value": i, "name": n} for i, n in mode_choices(profile)],
        },
        {
            "id": "model",
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": model,
            "options": [{"value": v, "name": n} for v, n in choices],
        },
    ]
