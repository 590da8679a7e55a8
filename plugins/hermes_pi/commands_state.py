"""pi's state commands: get_state, get_messages, get_session_stats, get_last_assistant_text,
get_commands, set_session_name (docs/reference/pi.md#state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_pi.messages import row_messages
from hermes_pi.models import level_of
from hermes_pi.wire import BadCommand, Command

if TYPE_CHECKING:
    from hermes_pi.host import PiHost


async def messages(host: PiHost) -> list[dict[str, Any]]:
    """Return the session's messages as pi lists them: the model's context after compaction,
    then the bash outputs the next prompt will carry."""
    rows = await host.session.history(replay=True)
    out = row_messages(rows, host.kernel.redactor.obj)
    out.extend(record.message() for record in host.bash.pending)
    return out


def session_name(session: Any) -> str | None:
    """Return pi's ``sessionName``: a title the user set, not one Hermes derived."""
    if session.record.title_origin != "explicit":
        return None
    title: str | None = session.info().title
    return title


async def get_state(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``get_state``: the session, its model and what runs."""
    session = host.session
    state: dict[str, Any] = {}
    model = await host.catalog.current(session)
    if model is not None:
        state["model"] = model
    effort = session.record.reasoning_effort or host.kernel.settings.reasoning_effort
    state.update(
        thinkingLevel=level_of(effort),
        isStreaming=host.stream.active,
        isCompacting=host.compacting,
        steeringMode="all",
        followUpMode=host.follow_up_mode,
    )
    if host.session_file is not None:
        state["sessionFile"] = host.session_file
    state["sessionId"] = session.id
    name = session_name(session)
    if name:
        state["sessionName"] = name
    state.update(
        autoCompactionEnabled=host.kernel.settings.compression.auto_threshold > 0,
        messageCount=len(await messages(host)),
        pendingMessageCount=host.queue.count,
    )
    return state


async def get_messages(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``get_messages``: every message of the conversation."""
    return {"messages": await messages(host)}


async def get_session_stats(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``get_session_stats``: message counts, tokens and the context window's use."""
    session = host.session
    found = await messages(host)
    roles = [m["role"] for m in found]
    usage = session.usage
    stats: dict[str, Any] = {}
    if host.session_file is not None:
        stats["sessionFile"] = host.session_file
    stats.update(
        sessionId=session.id,
        userMessages=roles.count("user"),
        assistantMessages=roles.count("assistant"),
        toolCalls=sum(
            1 for m in found if m["role"] == "assistant" for b in m["content"] if b.get("type") == "toolCall"
        ),
        toolResults=roles.count("toolResult"),
        totalMessages=len(found),
        tokens={
            "input": usage.input,
            "output": usage.output,
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": usage.total,
        },
        cost=usage.cost_usd or 0,
    )
    window = usage.context_max
    if window:
        used = usage.context_used
        stats["contextUsage"] = {
            "tokens": used,
            "contextWindow": window,
            "percent": round(100 * used / window, 1) if used is not None else None,
        }
    return stats


async def get_last_assistant_text(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``get_last_assistant_text``: the newest assistant text, skipping failed and tool-only replies."""
    for row in reversed(await host.session.history()):
        if row.role != "assistant" or not row.content:
            continue
        return {"text": row.content}
    return {"text": None}


async def get_commands(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``get_commands``: Hermes' slash commands, which run through ``prompt`` like pi's extension commands."""
    commands = []
    registry = host.kernel.registry
    for spec in registry.commands.values():
        if spec.needs_terminal_ui or "pi" in spec.unavailable_on:
            continue
        owner = registry.owners.get(("commands", spec.name), "hermes")
        commands.append(
            {
                "name": spec.name,
                "description": spec.summary,
                "source": "extension",
                "sourceInfo": {
                    "path": f"hermes:{owner}",
                    "source": "hermes",
                    "scope": "user",
                    "origin": "package",
                },
            }
        )
    return {"commands": commands}


async def set_session_name(host: PiHost, cmd: Command) -> None:
    """``set_session_name``: the session's title."""
    name = cmd.text("name", allow_empty=True).strip()
    if not name:
        raise BadCommand("Session name cannot be empty")
    await host.session.set_title(name)
