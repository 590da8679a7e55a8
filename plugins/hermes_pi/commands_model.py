"""pi's model, thinking, queue-mode, compaction and retry commands
(docs/reference/pi.md#models-and-thinking-levels, #compaction, #retries).

Auto-compaction and auto-retry are process settings in Hermes (``compression.auto_threshold``,
``agent.provider_retries``); a ``hermes pi`` process serves one client, so turning them off or on
changes them for this process only, never in ``config.toml``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import ModelAmbiguous, ModelNotFound
from hermes_pi import compaction
from hermes_pi.dispatch import Null
from hermes_pi.models import LEVEL_TO_EFFORT, LEVELS, level_of
from hermes_pi.wire import BadCommand, Command, unsupported

if TYPE_CHECKING:
    from hermes_pi.host import PiHost

DEFAULT_THRESHOLD = 0.85
DEFAULT_RETRIES = 2


async def set_model(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``set_model``: the session's model from the next turn on (stored with the session)."""
    provider, model_id = cmd.text("provider"), cmd.text("modelId")
    if not host.kernel.providers.has(provider):
        raise BadCommand(f"Model not found: {provider}/{model_id}")
    session = host.session  # the answer describes this session even if a new one replaces it
    try:
        await session.switch_model(f"{provider}:{model_id}", scope="session")
    except (ModelNotFound, ModelAmbiguous):
        raise BadCommand(f"Model not found: {provider}/{model_id}") from None
    model = await host.catalog.current(session)
    assert model is not None
    return model


async def cycle_model(host: PiHost, cmd: Command) -> Any:
    """``cycle_model``: the next available model (``null`` when there is only one)."""
    session = host.session  # the answer describes this session even if a new one replaces it
    models = await host.catalog.available(session)
    if len(models) <= 1:
        return Null
    current = await host.catalog.current(session)
    keys = [(m["provider"], m["id"]) for m in models]
    here = (current["provider"], current["id"]) if current else None
    index = (keys.index(here) + 1) % len(keys) if here in keys else 0
    chosen = models[index]
    await session.switch_model(f"{chosen['provider']}:{chosen['id']}", scope="session")
    level = level_of(session.record.reasoning_effort or host.kernel.settings.reasoning_effort)
    return {"model": await host.catalog.current(session), "thinkingLevel": level, "isScoped": False}


async def get_available_models(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``get_available_models``: every model of every provider that can answer."""
    return {"models": await host.catalog.available(host.session)}


async def set_thinking_level(host: PiHost, cmd: Command) -> None:
    """``set_thinking_level``: the session's reasoning effort (``max`` is clamped to ``xhigh``)."""
    level = cmd.choice("level", tuple(LEVEL_TO_EFFORT))
    await _set_level(host, level)


async def _set_level(host: PiHost, level: str) -> str:
    effort = LEVEL_TO_EFFORT[level]
    session = host.session
    before = level_of(session.record.reasoning_effort or host.kernel.settings.reasoning_effort)
    await session.set_reasoning_effort(effort)
    now = level_of(effort)
    if now != before:
        host.send({"type": "thinking_level_changed", "level": now})
    return now


async def cycle_thinking_level(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``cycle_thinking_level``: the next level, after ``xhigh`` back to ``off``."""
    current = level_of(host.session.record.reasoning_effort or host.kernel.settings.reasoning_effort)
    index = (LEVELS.index(current) + 1) % len(LEVELS) if current in LEVELS else 0
    return {"level": await _set_level(host, LEVELS[index])}


async def get_available_thinking_levels(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``get_available_thinking_levels``: the levels Hermes passes on as a reasoning effort."""
    return {"levels": list(LEVELS)}


async def set_steering_mode(host: PiHost, cmd: Command) -> None:
    """``set_steering_mode``: only ``all`` (the core delivers every steer at the next tool boundary)."""
    mode = cmd.choice("mode", ("all", "one-at-a-time"))
    if mode != "all":
        raise unsupported(
            "set_steering_mode one-at-a-time",
            "Hermes delivers all steering messages together at the next tool boundary",
        )


async def set_follow_up_mode(host: PiHost, cmd: Command) -> None:
    """``set_follow_up_mode``: one follow-up per turn, or all waiting ones joined into one turn."""
    host.follow_up_mode = cmd.choice("mode", ("all", "one-at-a-time"))


async def compact(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``compact``: abort what runs, then summarise older turns into one."""
    instructions = cmd.optional_text("customInstructions")
    if host.stream.active:
        await host.abort()
    if host.compacting:
        raise BadCommand("Compaction already running")
    host.compacting = True
    try:
        return await compaction.compact(host.session, instructions or None, host.send)
    finally:
        host.compacting = False


async def set_auto_compaction(host: PiHost, cmd: Command) -> None:
    """``set_auto_compaction``: compress before a turn past the threshold, or never (this process)."""
    enabled = cmd.flag("enabled")
    settings = host.kernel.settings
    current = settings.compression.auto_threshold
    if (enabled and current > 0) or (not enabled and current == 0):
        return
    if not enabled:
        host.saved_threshold = current
    value = (host.saved_threshold or DEFAULT_THRESHOLD) if enabled else 0.0
    compression = settings.compression.model_copy(update={"auto_threshold": value})
    host.kernel.replace_settings(settings.model_copy(update={"compression": compression}))


async def set_auto_retry(host: PiHost, cmd: Command) -> None:
    """``set_auto_retry``: retry rate limits and upstream failures, or never (this process)."""
    enabled = cmd.flag("enabled")
    settings = host.kernel.settings
    current = settings.agent.provider_retries
    if (enabled and current > 0) or (not enabled and current == 0):
        return
    if not enabled:
        host.saved_retries = current
    value = (host.saved_retries or DEFAULT_RETRIES) if enabled else 0
    agent = settings.agent.model_copy(update={"provider_retries": value})
    host.kernel.replace_settings(settings.model_copy(update={"agent": agent}))


async def abort_retry(host: PiHost, cmd: Command) -> None:
    """``abort_retry``: stop waiting to retry; the turn ends with the provider's error."""
    await host.abort_retry()
