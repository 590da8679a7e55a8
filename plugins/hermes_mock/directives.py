"""Parse the ``[[name args]]`` directives of the mock provider (docs/mock-provider.md).

A directive is recognised only when its name is known and its arguments are well formed; anything
else stays in the text exactly as typed. Recognised directives are removed from the text together
with one adjacent space: the one before them, else the one after them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

MAX_COUNT = 100_000  # upper bound of [[tokens N]] and [[rounds N]]
MAX_DELAY_MS = 60_000  # upper bound of [[delay MS]]

_OPEN = "[["
_CLOSE = "]]"
# A directive opens with a lowercase name and at least one whitespace character before its args.
_HEAD = re.compile(r"\[\[([a-z]+)\s+")
_DIGITS = re.compile(r"[0-9]+")
# A tool name runs up to whitespace or the opening brace of its JSON object.
_TOOL_NAME = re.compile(r"[^\s{}\[\]]+")
_DECODER = json.JSONDecoder()

_TEXT_DIRECTIVES = frozenset(
    {"rounds", "secret", "sudo", "tokens", "delay", "reason", "error", "finish", "title"}
)
_FINISH_REASONS = frozenset({"length", "refusal"})


@dataclass(frozen=True, slots=True)
class ToolCallPlan:
    """One tool call a directive asks for; ``arguments`` is JSON text."""

    name: str
    arguments: str


@dataclass(slots=True)
class Directives:
    """What the directives of one user message ask for, and the text without them.

    Single-valued directives keep the last occurrence; tool calls keep every occurrence in order.
    """

    text: str
    calls: list[ToolCallPlan] = field(default_factory=list)
    rounds: int | None = None
    tokens: int | None = None
    delay_ms: int | None = None
    reason: str | None = None
    error: str | None = None
    finish: str | None = None
    title: str | None = None


def _count(args: str, low: int, high: int) -> int | None:
    """Return ``args`` as an integer in ``[low, high]``, or ``None`` when it is not one.

    :param args: the stripped argument text.
    :param low: the smallest accepted value.
    :param high: the largest accepted value.
    :returns: the number, or ``None`` for a malformed directive.
    """
    if _DIGITS.fullmatch(args) is None:
        return None
    value = int(args)
    return value if low <= value <= high else None


def _apply_text(found: Directives, name: str, args: str) -> bool:
    """Record a directive whose arguments are plain text; return whether it was well formed.

    :param found: the accumulator to update.
    :param name: the directive's name.
    :param args: its stripped argument text.
    :returns: ``False`` when the arguments are malformed (the directive then stays as typed).
    """
    if not args:
        return False
    if name in ("rounds", "tokens"):
        number = _count(args, 1, MAX_COUNT)
        if number is None:
            return False
        if name == "rounds":
            found.rounds = number
        else:
            found.tokens = number
    elif name == "delay":
        number = _count(args, 0, MAX_DELAY_MS)
        if number is None:
            return False
        found.delay_ms = number
    elif name == "finish":
        if args not in _FINISH_REASONS:
            return False
        found.finish = args
    elif name == "secret":
        if any(ch.isspace() for ch in args):
            return False
        arguments = {"env_var": args, "prompt": f"Enter {args}"}
        found.calls.append(ToolCallPlan("request_secret", json.dumps(arguments, ensure_ascii=False)))
    elif name == "sudo":
        arguments = {"command": f"sudo {args}"}
        found.calls.append(ToolCallPlan("terminal", json.dumps(arguments, ensure_ascii=False)))
    elif name == "reason":
        found.reason = args
    elif name == "error":
        found.error = args
    else:  # title
        found.title = args
    return True


def _skip_spaces(text: str, pos: int) -> int:
    """Return the index of the first non-whitespace character at or after ``pos``.

    :param text: the text to scan.
    :param pos: where to start.
    :returns: that index, or ``len(text)``.
    """
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _match_tool(text: str, pos: int, found: Directives) -> int | None:
    """Read ``NAME {json}]]`` at ``pos`` and record the call; return the end of the directive.

    :param text: the whole message.
    :param pos: where the tool name should start.
    :param found: the accumulator to update.
    :returns: the index just past ``]]``, or ``None`` when the directive is malformed.
    """
    name_match = _TOOL_NAME.match(text, pos)
    if name_match is None:
        return None
    start = _skip_spaces(text, name_match.end())
    if not text.startswith("{", start):
        return None
    try:
        value, end = _DECODER.raw_decode(text, start)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    close = _skip_spaces(text, end)
    if not text.startswith(_CLOSE, close):
        return None
    # The arguments are passed on exactly as typed: the mock "produced" that JSON text.
    found.calls.append(ToolCallPlan(name_match.group(), text[start:end]))
    return close + len(_CLOSE)


def _match_at(text: str, pos: int, found: Directives) -> int | None:
    """Try to read one directive starting at ``pos`` (which holds ``[[``).

    :param text: the whole message.
    :param pos: the index of ``[[``.
    :param found: the accumulator to update when the directive is well formed.
    :returns: the index just past the directive, or ``None`` when there is none here.
    """
    head = _HEAD.match(text, pos)
    if head is None:
        return None
    name = head.group(1)
    if name == "tool":
        return _match_tool(text, head.end(), found)
    if name not in _TEXT_DIRECTIVES:
        return None
    close = text.find(_CLOSE, head.end())
    if close < 0:
        return None
    if not _apply_text(found, name, text[head.end() : close].strip()):
        return None
    return close + len(_CLOSE)


def parse(text: str) -> Directives:
    """Find the directives of a user message and remove them from its text.

    :param text: the user message as typed.
    :returns: the directives' requests and the text without them.
    """
    found = Directives(text=text)
    if _OPEN not in text:
        return found
    spans: list[tuple[int, int]] = []
    pos = text.find(_OPEN)
    while pos >= 0:
        end = _match_at(text, pos, found)
        if end is None:
            pos = text.find(_OPEN, pos + 1)
        else:
            spans.append((pos, end))
            pos = text.find(_OPEN, end)
    found.text = _remove(text, spans)
    return found


def strip_directives(text: str) -> str:
    """Return a user message's text with its directives removed.

    :param text: the user message as typed.
    :returns: the text the mock treats as what the user said.
    """
    return parse(text).text


def _remove(text: str, spans: list[tuple[int, int]]) -> str:
    """Cut each span out of ``text`` with one adjacent space, preferring the one before it.

    :param text: the original text.
    :param spans: ``(start, end)`` of each directive, in order and not overlapping.
    :returns: the remaining text.
    """
    pieces: list[str] = []
    kept_from = 0  # everything before this index has been handled
    for start, end in spans:
        cut_start, cut_end = start, end
        # A space already taken by the previous directive cannot be taken again.
        if start - 1 >= kept_from and text[start - 1] == " ":
            cut_start = start - 1
        elif end < len(text) and text[end] == " ":
            cut_end = end + 1
        pieces.append(text[kept_from:cut_start])
        kept_from = cut_end
    pieces.append(text[kept_from:])
    return "".join(pieces)
