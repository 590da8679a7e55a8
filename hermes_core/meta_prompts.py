"""The core's own requests to the model: a session title and a compression summary.

Both are built here in full, so that any provider answers them correctly: an instruction as the
system prompt, the conversation rendered as text inside one user message, and an output limit.
Rendering the history (rather than replaying it as messages) keeps the request a valid
``[system, user]`` exchange for every upstream API, whatever the rows hold: tool calls and their
results, assistant rows without text, earlier summaries, replies that were cut off.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_core.content import ImagePart, SeedMessage
from hermes_core.history import cut_off_note
from hermes_core.storage import Row

TITLE_INSTRUCTION = (
    "You name conversations. The user message holds a conversation between a user and an AI "
    "assistant. Reply with a short title for it: at most six words, in the language of the "
    "conversation, without quotes or a final full stop. Reply with the title only."
)
SUMMARY_INSTRUCTION = (
    "You compress conversations. The user message holds the earlier part of a conversation "
    "between a user and an AI assistant, which will be replaced by your summary. Write a summary "
    "that lets the assistant carry on without the original: what the user asked for and why, "
    "decisions made, facts learned (files, commands, results, errors) and what is still open. "
    "Reply with the summary only."
)
TITLE_MAX_TOKENS = 256
SUMMARY_MAX_TOKENS = 4096  # room for a reasoning model to think first
TITLE_CLIP = 1000  # characters kept of each message for a title
TOOL_CLIP = 2000  # characters kept of each tool result for a summary


@dataclass(frozen=True, slots=True)
class MetaRequest:
    """A tool-less model call the core makes for itself (see :meth:`Models.one_shot`)."""

    system: str
    messages: tuple[SeedMessage, ...]
    purpose: str
    options: Mapping[str, Any] = field(default_factory=dict)


def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"


def _block(role: str, body: str, extra: str = "") -> str:
    return f'<message role="{role}"{extra}>\n{body}\n</message>'


def render(rows: Iterable[Row], *, clip: int | None = None, tool_clip: int | None = None) -> tuple[str, int]:
    """Render rows as a ``<conversation>`` text; return it and the number of messages in it.

    :param clip: characters kept of each user and assistant text (None: all).
    :param tool_clip: characters kept of each tool result (None: all).
    """
    blocks: list[str] = []
    for row in rows:
        if row.display_kind in ("model_switch", "hidden"):
            continue
        if row.display_kind == "summary":
            blocks.append(_block("summary", row.content))
        elif row.role == "user":
            images = sum(1 for p in row.parts if isinstance(p, ImagePart))
            body = _clip(row.content, clip) + ("\n[image]" * images)
            blocks.append(_block("user", body.strip("\n")))
        elif row.role == "assistant":
            lines = [_clip(row.content, clip)] if row.content else []
            note = cut_off_note(row)
            if note:
                lines.append(note)
            lines.extend(f"[called tool {c.name} with {c.arguments or '{}'}]" for c in row.tool_calls)
            blocks.append(_block("assistant", "\n".join(lines)))
        elif row.role == "tool":
            name = row.tool_name or "tool"
            blocks.append(_block("tool", _clip(row.content, tool_clip), f' name="{name}"'))
        elif row.role == "system" and row.content:
            blocks.append(_block("system", row.content))
    return "<conversation>\n" + "\n".join(blocks) + "\n</conversation>", len(blocks)


def title_request(rows: Iterable[Row]) -> MetaRequest:
    """Return the request that asks for a title of the conversation in ``rows``."""
    text, _ = render(rows, clip=TITLE_CLIP, tool_clip=TITLE_CLIP)
    return MetaRequest(
        system=TITLE_INSTRUCTION,
        messages=(SeedMessage("user", f"Write a title for this conversation.\n\n{text}"),),
        purpose="title",
        options={"max_tokens": TITLE_MAX_TOKENS},
    )


def summary_request(rows: Iterable[Row], focus_topic: str | None = None) -> MetaRequest:
    """Return the request that asks for a summary of ``rows`` (``/compress``)."""
    text, _ = render(rows, tool_clip=TOOL_CLIP)
    ask = f"Summarise this conversation.\n\n{text}"
    if focus_topic:
        ask += f"\n\nFocus the summary on: {focus_topic}"
    return MetaRequest(
        system=SUMMARY_INSTRUCTION,
        messages=(SeedMessage("user", ask),),
        purpose="compress",
        options={"max_tokens": SUMMARY_MAX_TOKENS},
    )
