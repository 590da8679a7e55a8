"""Read-only reports: ``/usage`` (tokens and context) and ``/status`` (the session's state)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from hermes_core import CommandResult
from hermes_slash.common import plural, session_of

if TYPE_CHECKING:
    from hermes_core import CommandContext, Usage


def context_percent(usage: Usage) -> float | None:
    """Return how full the context window is, in percent, when both numbers are known.

    :param usage: the session's cumulative usage.
    :returns: ``context_used / context_max * 100`` rounded to one decimal, or None.
    """
    if usage.context_used is None or not usage.context_max:
        return None
    return round(usage.context_used * 100.0 / usage.context_max, 1)


def format_usage(usage: Usage) -> str:
    """Describe the session's usage in two or three lines.

    :param usage: the session's cumulative usage.
    :returns: the text ``/usage`` prints.
    """
    estimated = " (estimated)" if usage.estimated else ""
    lines = [
        f"Tokens: {usage.input:,} input, {usage.output:,} output ({usage.reasoning:,} reasoning), "
        f"{usage.total:,} total over {plural(usage.calls, 'model call')}{estimated}"
    ]
    percent = context_percent(usage)
    if percent is not None and usage.context_max:
        lines.append(
            f"Context: {usage.context_used or 0:,} of {usage.context_max:,} tokens used ({percent:.1f}%)"
        )
    elif usage.context_used is not None:
        lines.append(f"Context: {usage.context_used:,} tokens used (window size unknown)")
    else:
        lines.append("Context: no model call yet")
    if usage.cost_usd is not None:
        lines.append(f"Cost: ${usage.cost_usd:.4f}")
    return "\n".join(lines)


async def usage_command(ctx: CommandContext) -> CommandResult:
    """Run ``/usage``: the session's cumulative token counts and context use (docs/reference/core.md#usage).

    :param ctx: the dispatch context.
    :returns: readable counts; ``data`` holds every ``Usage`` field plus ``context_percent``.
    """
    usage = session_of(ctx).usage
    data: dict[str, Any] = {**asdict(usage), "context_percent": context_percent(usage)}
    return CommandResult(kind="exec", output=format_usage(usage), data=data)


async def status_command(ctx: CommandContext) -> CommandResult:
    """Run ``/status``: model, provider, workspace, profile, title and run state.

    :param ctx: the dispatch context.
    :returns: one line per fact; ``data`` holds the same fields.
    """
    session = session_of(ctx)
    info = session.info()
    data: dict[str, Any] = {
        "session_id": info.session_id,
        "title": info.title,
        "model": info.model,
        "provider": info.provider,
        "model_source": info.model_source,
        "cwd": info.cwd,
        "profile": info.profile,
        "status": info.status,
        "busy": info.busy,
        "running": info.running,
        "queued": info.queued,
        "parent_session_id": info.parent_session_id,
    }
    lines = [
        f"Session: {info.session_id}",
        f"Title: {info.title or '(none yet)'}",
        f"Model: {info.model or '(none)'} (provider {info.provider or 'none'}, source: {info.model_source})",
        f"Workspace: {info.cwd}",
        f"Approval profile: {info.profile}",
        f"State: {info.status}{', busy' if info.busy else ''}, {plural(info.queued, 'queued prompt')}",
    ]
    if info.parent_session_id:
        lines.append(f"Branched from: {info.parent_session_id}")
    return CommandResult(kind="exec", output="\n".join(lines), data=data)
