"""Turn what the gateway says into text for the scrollback: rich ANSI, or plain for scripts.

Both painters return finished strings (ending in a newline) and never write themselves; the
screen decides where they go. :class:`RichPainter` imports rich when it is built and
``rich.markdown`` on first use, so commands other than ``hermes chat`` never pay for either.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

PREVIEW_LINES = 4  # lines of a tool's output shown before "/expand N"
DIFF_LINES = 40  # lines of a diff shown before "/expand N"


class Painter(Protocol):
    """How each kind of output looks."""

    def user(self, text: str) -> str: ...

    def markdown(self, block: str) -> str: ...

    def reasoning(self, text: str) -> str: ...

    def tool(self, number: int, payload: dict[str, Any], *, expanded: bool = False) -> str: ...

    def notice(self, text: str, level: str = "info") -> str: ...

    def command(self, text: str) -> str: ...

    def subagent(self, payload: dict[str, Any]) -> str: ...


def tool_subject(payload: dict[str, Any]) -> str:
    """Return the one-line description of a tool call (its context, else its arguments)."""
    context = payload.get("context")
    if isinstance(context, str) and context.strip() and not context.lstrip().startswith("{"):
        return " ".join(context.split())
    args = payload.get("args")
    if isinstance(args, dict) and args:
        for key in ("command", "path", "query", "question", "goal", "url", "env_var"):
            value = args.get(key)
            if isinstance(value, str) and value:
                return " ".join(value.split())
        return json.dumps(args, ensure_ascii=False)[:200]
    return ""


def tool_lines(payload: dict[str, Any]) -> list[str]:
    """Return the output lines of a finished tool call (the error first, when it failed)."""
    text = payload.get("result")
    lines = str(text).rstrip("\n").splitlines() if isinstance(text, str) and text else []
    error = payload.get("error")
    if isinstance(error, str) and error and error not in (text or ""):
        lines.insert(0, error)
    return lines


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


def _duration(payload: dict[str, Any]) -> str:
    seconds = payload.get("duration_s")
    if not isinstance(seconds, int | float):
        return ""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


class PlainPainter:
    """Plain text, for a stdin that is not a terminal (scripts read it)."""

    def __init__(self, width: int = 100) -> None:
        self.width = width

    def user(self, text: str) -> str:
        return ""

    def markdown(self, block: str) -> str:
        return block if block.endswith("\n") else block + "\n"

    def reasoning(self, text: str) -> str:
        return ""

    def tool(self, number: int, payload: dict[str, Any], *, expanded: bool = False) -> str:
        mark = "✗" if payload.get("error") else "✓"
        lines = tool_lines(payload)
        first = _clip(lines[0], 200) if lines else ""
        return f"{mark} {payload.get('name', 'tool')}{': ' + first if first else ''}\n"

    def notice(self, text: str, level: str = "info") -> str:
        prefix = {"error": "Error: ", "warn": "Warning: "}.get(level, "")
        return f"{prefix}{text}\n"

    def command(self, text: str) -> str:
        return text if text.endswith("\n") else text + "\n"

    def subagent(self, payload: dict[str, Any]) -> str:
        status = payload.get("status", "")
        summary = payload.get("summary") or payload.get("error") or ""
        return f"subagent {status}: {payload.get('goal', '')}{' - ' + str(summary) if summary else ''}\n"


class RichPainter:
    """ANSI text rendered by rich at the terminal's current width."""

    def __init__(self, width: Callable[[], int]) -> None:
        from rich.console import Console

        self._width = width
        self._console: Console = Console(
            force_terminal=True, highlight=False, emoji=False, soft_wrap=False, legacy_windows=False
        )

    def _render(self, *items: RenderableType, width: int | None = None) -> str:
        console = self._console
        console.width = max(20, width or self._width())
        with console.capture() as capture:
            for item in items:
                console.print(item)
        return capture.get()

    def _text(self, text: str, style: str = "") -> str:
        from rich.text import Text

        return self._render(Text(text, style=style))

    def user(self, text: str) -> str:
        from rich.text import Text

        lines = text.splitlines() or [""]
        shown = Text()
        for index, line in enumerate(lines):
            shown.append("❯ " if index == 0 else "  ", style="bold cyan")
            shown.append(line + ("\n" if index < len(lines) - 1 else ""), style="bold")
        return "\n" + self._render(shown)

    def markdown(self, block: str) -> str:
        from rich.markdown import Markdown

        rendered = self._render(Markdown(block, code_theme="monokai", hyperlinks=False))
        return rendered.rstrip("\n") + "\n" if rendered.strip() else ""

    def reasoning(self, text: str) -> str:
        lines = text.strip().splitlines()
        if not lines:
            return ""
        head = lines[:6]
        more = f"\n  … {len(lines) - 6} more lines of reasoning" if len(lines) > 6 else ""
        return self._text("\n".join("  " + line for line in head) + more, "dim italic")

    def tool(self, number: int, payload: dict[str, Any], *, expanded: bool = False) -> str:
        from rich.text import Text

        width = self._width()
        failed = bool(payload.get("error"))
        header = Text()
        header.append("✗ " if failed else "✓ ", style="bold red" if failed else "bold green")
        header.append(f"[{number}] ", style="dim")
        header.append(str(payload.get("name", "tool")), style="bold")
        subject = tool_subject(payload)
        if subject:
            header.append(" · " + _clip(subject, max(width - 30, 20)), style="")
        took = _duration(payload)
        if took:
            header.append(f"  {took}", style="dim")
        parts: list[Any] = [header]
        diff = payload.get("inline_diff")
        if isinstance(diff, str) and diff.strip():
            parts.append(self._diff(diff, number, expanded))
        else:
            lines = tool_lines(payload)
            shown = lines if expanded else lines[:PREVIEW_LINES]
            body = Text()
            for line in shown:
                body.append("  │ ", style="dim")
                body.append(_clip(line, max(width - 4, 20)) + "\n", style="red" if failed else "dim")
            if len(lines) > len(shown):
                body.append(
                    f"  … {len(lines) - len(shown)} more lines · /expand {number}\n", style="dim italic"
                )
            if body.plain:
                body.rstrip()
                parts.append(body)
        return self._render(*parts)

    def _diff(self, diff: str, number: int, expanded: bool) -> Any:
        from rich.text import Text

        lines = diff.rstrip("\n").splitlines()
        shown = lines if expanded else lines[:DIFF_LINES]
        body = Text()
        for line in shown:
            if line.startswith(("+++", "---")):
                style = "bold"
            elif line.startswith("+"):
                style = "green"
            elif line.startswith("-"):
                style = "red"
            elif line.startswith("@@"):
                style = "cyan"
            else:
                style = "dim"
            body.append("  " + line + "\n", style=style)
        if len(lines) > len(shown):
            body.append(f"  … {len(lines) - len(shown)} more lines · /expand {number}\n", style="dim italic")
        body.rstrip()
        return body

    def notice(self, text: str, level: str = "info") -> str:
        style, mark = {
            "error": ("bold red", "✗ "),
            "warn": ("yellow", "⚠ "),
            "ok": ("green", "✓ "),
            "info": ("dim", ""),
        }.get(level, ("dim", ""))
        return self._text(mark + text, style)

    def command(self, text: str) -> str:
        from rich.text import Text

        return self._render(Text(text.rstrip("\n")))

    def subagent(self, payload: dict[str, Any]) -> str:
        from rich.text import Text

        depth = payload["depth"] if isinstance(payload.get("depth"), int) else 1
        status = str(payload.get("status", ""))
        ok = status == "completed"
        line = Text("  " * depth + "↳ ")
        line.append("✓ " if ok else "✗ ", style="green" if ok else "red")
        line.append(_clip(str(payload.get("goal", "")), 60), style="bold")
        summary = payload.get("summary") or payload.get("error") or status
        if summary:
            line.append(" — " + _clip(" ".join(str(summary).split()), 200), style="dim")
        return self._render(line)
