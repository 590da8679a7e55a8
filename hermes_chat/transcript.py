"""Whole sessions on the chat's screen: the transcript shown when a session is opened, and the
reconciliation after the gateway lost the chat's place (a restart, a reconnect)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_chat.screen_parts import QUESTION_KINDS, ToolCall

if TYPE_CHECKING:
    from hermes_chat.screen import Screen


def show_snapshot(screen: Screen, snapshot: dict[str, Any], *, limit: int = 40) -> None:
    """Show a session being opened (resumed, branched, new): its info and its transcript."""
    screen.turn = None
    screen.running.clear()
    screen.subagents.clear()
    info = snapshot.get("info")
    if isinstance(info, dict):
        screen.apply_info(info)
    messages = [m for m in snapshot.get("messages") or [] if isinstance(m, dict)]
    if len(messages) > limit:
        screen.notice(f"… {len(messages) - limit} earlier messages (/history lists them)")
        for message in messages[:-limit]:
            if isinstance(message.get("row_id"), int):
                screen.rows_shown.add(message["row_id"])
        messages = messages[-limit:]
    for message in messages:
        _show_row(screen, message)
    _reopen_questions(screen, snapshot)


def _show_row(screen: Screen, message: dict[str, Any], skip_prefix: str = "") -> None:
    row = message.get("row_id")
    if isinstance(row, int):
        screen.rows_shown.add(row)
    role, text = message.get("role"), str(message.get("text", ""))
    if role == "user":
        screen.echo_user(text)
    elif role == "assistant":
        if skip_prefix and text.startswith(skip_prefix):
            text = text[len(skip_prefix) :]
        if text.strip():
            screen.write_blocks([text] if screen.live else [])
            if not screen.live:
                screen.out.write(text.rstrip("\n") + "\n", reply=True)
        cut = message.get("cut_off")
        if cut:
            screen.notice(f"(this reply was cut off: {cut})", "warn")
    elif role == "tool":
        call = ToolCall(len(screen.tools) + 1, str(message.get("name", "tool")), "")
        call.payload = {"name": call.name, "context": message.get("context"), "result": text}
        screen.tools.append(call)
        screen.out.write(screen.painter.tool(call.number, call.payload))
    elif text:
        screen.notice(text if len(text) < 400 else text[:400] + "…")


def _reopen_questions(screen: Screen, snapshot: dict[str, Any]) -> None:
    screen.questions = []
    for request in snapshot.get("open_requests") or []:
        if isinstance(request, dict):
            kind = str(request.get("type", request.get("kind", ""))).split(".")[0]
            payload: dict[str, Any] = (
                request["payload"] if isinstance(request.get("payload"), dict) else request
            )
            if kind in QUESTION_KINDS:
                screen.add_question(kind, payload)


def rebuilt(screen: Screen, snapshot: dict[str, Any]) -> None:
    """Reconcile after the gateway lost our place: show what is new, mark what was cut off."""
    turn, streamed = screen.turn, ""
    if turn is not None:
        streamed = turn.stream.text
        screen.turn = None
        if screen.live:
            blocks, _ = turn.stream.finish(None)
            screen.write_blocks(blocks)
        elif streamed and not streamed.endswith("\n"):
            screen.out.write("\n", reply=True)
    screen.running.clear()
    screen.subagents.clear()
    info = snapshot.get("info")
    if isinstance(info, dict):
        screen.apply_info(info)
    messages = [m for m in snapshot.get("messages") or [] if isinstance(m, dict)]
    known = [
        m["row_id"] for m in messages if isinstance(m.get("row_id"), int) and m["row_id"] in screen.rows_shown
    ]
    newest = max(known, default=0)
    fresh = [
        m
        for m in messages
        if not (
            isinstance(m.get("row_id"), int) and (m["row_id"] in screen.rows_shown or m["row_id"] < newest)
        )
    ]
    continued = False
    seen = list(turn.shown) if turn is not None else []
    for message in fresh:
        role, text = str(message.get("role")), str(message.get("text", ""))
        if (role, text.strip()) in seen:  # shown while it streamed, before the drop
            seen.remove((role, text.strip()))
            if isinstance(message.get("row_id"), int):
                screen.rows_shown.add(message["row_id"])
            continue
        prefix = ""
        if turn is not None and not continued and role == "assistant" and streamed:
            if text.startswith(streamed):
                prefix, continued = streamed, True
            elif text.strip() and streamed.startswith(text.rstrip()):
                # The gateway stopped before it stored all it had sent: the screen already
                # holds the stored part and more. Nothing to show; the reply was cut off.
                if isinstance(message.get("row_id"), int):
                    screen.rows_shown.add(message["row_id"])
                streamed = ""
                continue
        _show_row(screen, message, skip_prefix=prefix)
    if turn is not None and not continued:
        screen.notice("the reply above was cut off when the gateway stopped", "warn")
    if screen.finished_turns < screen.expected_turns:  # lost with the gateway, or ended while away
        screen.failed_turns += 1 if not continued else 0
        screen.finished_turns = screen.expected_turns
    _reopen_questions(screen, snapshot)
    screen.out.refresh()
