"""What the interactive chat draws between the scrollback and the input: formatted text only.

Each function reads the app's state and returns prompt_toolkit fragments; they run on every
redraw, so each is cheap: the live part of a reply is at most the last few screen lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prompt_toolkit.formatted_text import StyleAndTextTuples

if TYPE_CHECKING:
    from hermes_chat.app import ChatApp

TAIL_LINES = 8
APPROVAL_LABELS = {"once": "once", "session": "this session", "always": "always", "deny": "deny"}


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


def _last_screen_lines(text: str, width: int, count: int) -> list[str]:
    """Return the last ``count`` lines ``text`` takes on a screen ``width`` columns wide."""
    out: list[str] = []
    for line in reversed(text.split("\n")):
        pieces = [line[i : i + width] for i in range(0, len(line), width)] or [""]
        out[:0] = pieces
        if len(out) >= count:
            break
    return out[-count:]


def live_fragments(app: ChatApp) -> StyleAndTextTuples:
    """Running tools and subagents, the reasoning in progress, and the reply's unfinished end."""
    screen = app.screen
    width = max(app.columns() - 1, 20)
    out: StyleAndTextTuples = []
    for call in screen.running.values():
        line = f"⋯ [{call.number}] {call.name}" + (f" · {call.subject}" if call.subject else "")
        out.append(("class:live.tool", _clip(line, width) + "\n"))
        if call.preview:
            out.append(("class:live.dim", "  │ " + _clip(call.preview, width - 4) + "\n"))
    for child in screen.subagents.values():
        depth = child["depth"] if isinstance(child.get("depth"), int) else 1
        line = "  " * depth + f"↳ ⋯ {child.get('goal', '')}"
        if child.get("tools"):
            line += f" · {child['tools']} tools"
        if child.get("last"):
            line += f" · {child['last']}"
        out.append(("class:live.dim", _clip(line, width) + "\n"))
    turn = screen.turn
    if turn is not None and turn.reasoning and not turn.reasoning_shown:
        last = turn.reasoning.strip().splitlines()[-1:] or [""]
        out.append(("class:live.dim", _clip("thinking · " + last[0], width) + "\n"))
    tail = screen.tail()
    if tail.strip():
        out.append(("class:live", "\n".join(_last_screen_lines(tail.rstrip("\n"), width, TAIL_LINES)) + "\n"))
    elif turn is not None and not screen.running and not screen.questions:
        out.append(("class:live.dim", (screen.status_text or "⋯") + "\n"))
    if screen.status_text and tail.strip():
        out.append(("class:live.dim", _clip(screen.status_text, width) + "\n"))
    return out


def question_fragments(app: ChatApp) -> StyleAndTextTuples:
    """The open question and the keys that answer it."""
    question = app.question
    if question is None:
        return []
    payload = question.payload
    out: StyleAndTextTuples = []
    if question.kind == "approval":
        what = (
            payload.get("description") or payload.get("command") or payload.get("tool_name") or "a tool call"
        )
        out.append(("class:question", f"? Allow {what}\n"))
        choices = [c for c in payload.get("choices") or list(APPROVAL_LABELS) if c in APPROVAL_LABELS]
        for choice in choices:
            out.append(("class:question.key", f"  [{choice[0]}]"))
            out.append(("", f" {APPROVAL_LABELS[choice]}"))
        out.append(("", "\n"))
    elif question.kind == "clarify":
        out.append(("class:question", f"? {payload.get('question', '')}\n"))
        for index, choice in enumerate(payload.get("choices") or [], 1):
            if index <= 9:
                out.append(("class:question.key", f"  [{index}]"))
                out.append(("", f" {choice}"))
        out.append(("class:question.hint", "  (or type an answer and press Enter)\n"))
    else:
        if question.kind == "sudo":
            text = "sudo password" + (f" for {payload['command']}" if payload.get("command") else "")
        else:
            text = str(payload.get("prompt") or f"value for {payload.get('env_var', 'the secret')}")
        out.append(("class:question", f"? {text}"))
        out.append(("class:question.hint", "  (hidden; Enter sends, Esc skips)\n"))
    waiting = len(app.screen.questions) - 1
    if waiting > 0:
        out.append(("class:question.hint", f"  (+{waiting} more waiting)\n"))
    return out


def _tokens(count: object) -> str:
    if not isinstance(count, int):
        return "0"
    return f"{count / 1000:.1f}k" if count >= 10_000 else str(count)


def toolbar_fragments(app: ChatApp) -> StyleAndTextTuples:
    """Model, state, usage and title on one line; the connection state when it is not fine."""
    screen = app.screen
    info, usage = screen.info, screen.usage
    parts = [str(info.get("model") or "…")]
    status = "running" if screen.busy else str(info.get("status") or "idle")
    if screen.questions:
        status = "waiting for you"
    parts.append(status)
    parts.append(f"{_tokens(usage.get('total'))} tokens")
    percent = usage.get("context_percent")
    if isinstance(percent, int | float):
        parts.append(f"ctx {percent:.0f}%")
    cost = usage.get("cost_usd")
    if isinstance(cost, int | float) and cost:
        parts.append(f"${cost:.4f}")
    if info.get("title"):
        parts.append(str(info["title"]))
    text = " " + " · ".join(parts) + " "
    hint = " Ctrl+C stop · Esc Esc steer " if screen.busy else " /help · Ctrl+D quit "
    out: StyleAndTextTuples = []
    if app.link_state:
        out.append(("class:toolbar.warn", f" ⚠ {app.link_state} "))
    width = app.columns()
    used = len(text) + len(hint) + sum(len(fragment[1]) for fragment in out)
    out.append(("class:toolbar", _clip(text, max(width - len(hint) - 1, 10))))
    out.append(("class:toolbar", " " * max(width - used, 1) + hint))
    return out
