"""From stored rows to what hosts see (the projection) and what the model sees (messages)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from hermes_core.providers import ChatMessage, ToolCallRequest
from hermes_core.storage import NewRow, Row, StoredToolCall

MARKER_KINDS = frozenset({"model_switch", "hidden"})

# An assistant row whose text stopped early carries ``meta["cut_off"]``: "error" when the turn
# failed after text had streamed, "interrupted" when the turn was interrupted (by the user, or by
# shutdown). The text is kept as the user saw it; the model is told it was cut off.
CUT_OFF_NOTES = {
    "error": "[This reply was cut off: the model call failed before the reply was finished.]",
    "interrupted": "[This reply was cut off: the turn was interrupted before the reply was finished.]",
}


# A user row whose turn ended before any reply was stored carries ``meta["no_reply"]``:
# "interrupted" when the process running the turn ended first (a crash, ``kill -9``). Hosts that
# redraw a transcript from rows show the note in the reply's place; the model's view is unchanged.
NO_REPLY_NOTES = {
    "interrupted": "[No reply: the turn was interrupted (its process ended) before the reply began.]",
}


def no_reply_note(row: Row) -> str | None:
    """Return the note that stands for the reply a user row's turn never gave, else None."""
    if row.role != "user" or not row.meta:
        return None
    reason = row.meta.get("no_reply")
    return NO_REPLY_NOTES.get(reason) if isinstance(reason, str) else None


def cut_off_reason(row: Row) -> str | None:
    """Return why an assistant row's text is incomplete (``error``/``interrupted``), else None."""
    if row.role != "assistant" or not row.meta:
        return None
    reason = row.meta.get("cut_off")
    if reason in CUT_OFF_NOTES:
        return str(reason)
    # Rows written before the reason was stored carry only this flag.
    return "interrupted" if row.meta.get("interrupted") else None


def cut_off_note(row: Row) -> str | None:
    """Return the note that tells the model (and a summary) this row's text was cut off."""
    reason = cut_off_reason(row)
    return CUT_OFF_NOTES[reason] if reason else None


def materialize(session_id: str, new: NewRow, row_id: int) -> Row:
    """Return the :class:`Row` storage made of ``new`` under id ``row_id``."""
    calls = tuple(
        c if c.call_id else StoredToolCall(f"tc_{row_id}_{i}", c.provider_call_id, c.name, c.arguments)
        for i, c in enumerate(new.tool_calls)
    )
    return Row(
        id=row_id,
        session_id=session_id,
        position=new.position if new.position is not None else row_id,
        role=new.role,
        content=new.content,
        parts=new.parts,
        tool_calls=calls,
        call_id=new.call_id,
        provider_call_id=new.provider_call_id,
        tool_name=new.tool_name,
        display_kind=new.display_kind,
        active=True,
        archived_reason=None,
        model=new.model,
        reasoning=new.reasoning,
        input_tokens=new.input_tokens,
        output_tokens=new.output_tokens,
        meta=dict(new.meta),
        created_at=new.created_at or time.time(),
    )


def is_user_turn(row: Row) -> bool:
    """Whether the row counts as a user turn (user ordinals,
    docs/reference/core.md#messages-and-the-projection)."""
    return row.role == "user" and row.active and row.display_kind is None


def project(rows: Iterable[Row], *, replay: bool = False) -> list[Row]:
    """Return the rows hosts see: markers and tool-call-only assistant rows left out.

    With ``replay`` the tool-call assistant rows and tool rows stay, so a host can redraw tool
    calls (ACP load).
    """
    out: list[Row] = []
    for row in rows:
        if row.display_kind in MARKER_KINDS:
            continue
        if not replay and row.role == "assistant" and row.tool_calls and not row.content:
            continue
        out.append(row)
    return out


def to_messages(rows: Sequence[Row]) -> list[ChatMessage]:
    """Build the model's view of the active rows.

    Tool calls left without a result (an interrupted round) get a synthetic "interrupted"
    result so that every upstream API accepts the history. A reply that was cut off ends with a
    note saying so, so the model does not take it for a finished answer.
    """
    answered = {r.provider_call_id for r in rows if r.role == "tool"}
    messages: list[ChatMessage] = []
    for row in rows:
        if row.role == "assistant":
            calls = tuple(ToolCallRequest(c.provider_call_id, c.name, c.arguments) for c in row.tool_calls)
            note = cut_off_note(row)
            text = f"{row.content}\n\n{note}" if note and row.content else row.content
            messages.append(ChatMessage("assistant", text, tool_calls=calls))
            for c in row.tool_calls:
                if c.provider_call_id not in answered:
                    messages.append(
                        ChatMessage(
                            "tool",
                            "Interrupted before it finished.",
                            tool_call_id=c.provider_call_id,
                            name=c.name,
                        )
                    )
        elif row.role == "tool":
            messages.append(
                ChatMessage(
                    "tool",
                    row.content,
                    parts=row.parts,
                    tool_call_id=row.provider_call_id,
                    name=row.tool_name,
                )
            )
        elif row.role == "user":
            messages.append(ChatMessage("user", row.content, parts=row.parts))
        else:
            messages.append(ChatMessage("system", row.content))
    return messages


def user_row_ids(rows: Iterable[Row]) -> list[int | None]:
    """Return the ids of the active user turns in ordinal order."""
    return [r.id for r in rows if is_user_turn(r)]
