"""Replay a stored transcript as ``session/update`` notifications (docs/reference/acp.md#sessionload)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes_acp import toolcalls
from hermes_acp.subagent_calls import replay_results
from hermes_core import FileChange, ImagePart, cut_off_note, no_reply_note

if TYPE_CHECKING:
    from hermes_acp.conn import AcpConnection
    from hermes_acp.state import AcpSession
    from hermes_core import Row


def _text(kind: str, text: str, message_id: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}, "messageId": message_id}


def spec_title(
    conn: AcpConnection, name: str, args: dict[str, Any], session_id: str | None = None
) -> tuple[str | None, str | None]:
    """Return a tool's declared kind and its title for these arguments.

    :param conn: the connection.
    :param name: the tool name.
    :param args: the arguments.
    :param session_id: look among this session's own tools first.
    :returns: ``(kind, title)``, each ``None`` when unknown.
    """
    spec = conn.kernel.registry.tool(name, session_id)
    if spec is None:
        return None, None
    title = spec.title
    try:
        text = title(args) if callable(title) else title
    except Exception:
        text = None
    return spec.kind, text


def _as_announced(
    conn: AcpConnection, meta: Mapping[str, Any] | None, name: str, args: dict[str, Any], session_id: str
) -> tuple[str | None, str | None]:
    """The kind and title a call was shown with live: stored with its result (since they were),
    else from the session's tools as they are now."""
    kind, title = (meta or {}).get("kind"), (meta or {}).get("title")
    if isinstance(kind, str) and isinstance(title, str):
        return kind, title
    return spec_title(conn, name, args, session_id)


def _paths(
    conn: AcpConnection, cwd: str, name: str, args: dict[str, Any], session_id: str
) -> tuple[str, ...]:
    spec = conn.kernel.registry.tool(name, session_id)
    keys = spec.path_args if spec is not None and spec.path_args else ("path",)
    out: list[str] = []
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            path = value if os.path.isabs(value) else os.path.join(cwd, value)
            out.append(os.path.normpath(path))
    return tuple(out)


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return dict(raw)
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def plan_update(todos: Sequence[Any]) -> dict[str, Any]:
    """Build a ``plan`` update from todo items (objects or dicts).

    :param todos: the full todo list.
    :returns: the update.
    """
    entries = []
    for item in todos:
        get = item.get if isinstance(item, dict) else lambda k, d=None, i=item: getattr(i, k, d)
        status = str(get("status", "pending"))
        content = str(get("content", ""))
        if status == "cancelled":
            status, content = "completed", f"[cancelled] {content}"
        if status not in ("pending", "in_progress", "completed"):
            status = "pending"
        priority = str(get("priority", "medium"))
        if priority not in ("high", "medium", "low"):
            priority = "medium"
        entries.append({"content": content, "priority": priority, "status": status})
    return {"sessionUpdate": "plan", "entries": entries}


def replay(
    conn: AcpConnection,
    acp_session: AcpSession,
    rows: Sequence[Row],
    nested: dict[str, list[str]] | None = None,
) -> None:
    """Send the transcript as updates, in order; the caller answers afterwards.

    :param conn: the connection.
    :param acp_session: the session.
    :param rows: the replay projection (``history(replay=True)``).
    :param nested: the ``delegate_task`` results stored by each descendant child
        (``subagent_calls.stored_descendants``), replayed below that child.
    """
    session_id = acp_session.id
    cwd = str(acp_session.core.cwd)
    send = conn.update
    announced: dict[str, tuple[str, dict[str, Any]]] = {}
    todos: Any = None
    # What each call was announced with live, stored on its result row.
    shown = {row.call_id: row.meta for row in rows if row.role == "tool" and row.call_id and row.meta}
    for row in rows:
        mid = f"row-{row.id}"
        if row.role == "user":
            if row.content:
                send(session_id, _text("user_message_chunk", row.content, mid))
            missing = no_reply_note(row)
            if missing:  # the turn ended before any reply (a crash): say so in the reply's place
                send(session_id, _text("agent_message_chunk", missing, f"{mid}-no-reply"))
        elif row.role == "assistant":
            if row.display_kind == "summary":
                send(
                    session_id, _text("agent_message_chunk", f"Summary of earlier turns: {row.content}", mid)
                )
                continue
            if row.reasoning:
                send(session_id, _text("agent_thought_chunk", row.reasoning, f"{mid}-thought"))
            if row.content:
                send(session_id, _text("agent_message_chunk", row.content, mid))
                note = cut_off_note(row)
                if note:  # the reply stopped early; say so where the text ends
                    send(session_id, _text("agent_message_chunk", f"\n\n{note}", mid))
            for call in row.tool_calls:
                args = _args(call.arguments)
                kind, title = _as_announced(conn, shown.get(call.call_id or ""), call.name, args, session_id)
                paths = _paths(conn, cwd, call.name, args, session_id)
                send(
                    session_id,
                    toolcalls.announce(call.call_id or "", call.name, kind, title, args, paths, None),
                )
                announced[call.call_id or ""] = (call.name, args)
        elif row.role == "tool":
            call_id = row.call_id or ""
            name, args = announced.pop(call_id, (row.tool_name or "tool", {}))
            meta = dict(row.meta or {})
            change = None
            fc = meta.get("file_change")
            if (
                isinstance(fc, dict)
                and isinstance(fc.get("path"), str)
                and isinstance(fc.get("new_text"), str)
            ):
                change = FileChange(fc["path"], fc.get("old_text"), fc["new_text"])
            failed = bool(meta.get("is_error")) and not (
                name == "terminal" and toolcalls.terminal_exited(row.content)
            )
            send(
                session_id,
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": "failed" if failed else "completed",
                    "content": toolcalls.final_content(name, args, row.content, change)
                    + [
                        toolcalls.image_block(part)
                        for part in row.parts
                        if isinstance(part, ImagePart) and part.data is not None
                    ],
                },
            )
            if isinstance(meta.get("todos"), list):
                todos = meta["todos"]
            if name == "delegate_task":
                replay_results(lambda update: send(session_id, update), row.content, nested)
        elif row.role == "system" and row.display_kind == "summary":
            send(session_id, _text("agent_message_chunk", f"Summary of earlier turns: {row.content}", mid))
    for call_id in announced:
        send(
            session_id,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "failed",
                "content": [toolcalls.text_block("Ended without a result")],
            },
        )
    if todos is not None:
        send(session_id, plan_update(todos))
