"""Helpers shared by the core tools: argument checks, the output cap and sensitive paths.

The output cap keeps the head and the tail of a long result and marks the cut in between, so the
model sees how a command started and how it ended. Sensitive paths follow docs/reference/core.md#fixed-asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from hermes_core import ToolContext, ToolError

DEFAULT_OUTPUT_CAP = 50_000

# Names from docs/reference/core.md#fixed-asks: any path component named like this makes a path sensitive.
_SENSITIVE_DIRS = frozenset({".git", ".ssh"})
_PRIVATE_KEY_NAMES = frozenset({"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"})


def is_sensitive_name(name: str) -> bool:
    """Tell whether one path component names a sensitive file or directory.

    :param name: a single path component.
    :returns: True for ``.git``, ``.ssh``, ``.env``, ``.env.*``, private keys, ``*.pem``, ``*.key``.
    """
    if name in _SENSITIVE_DIRS or name in _PRIVATE_KEY_NAMES:
        return True
    if name == ".env" or name.startswith(".env."):
        return True
    return name.endswith((".pem", ".key"))


def is_sensitive(path: PurePath) -> bool:
    """Tell whether any component of ``path`` is sensitive (docs/reference/core.md#fixed-asks).

    :param path: an absolute or relative path.
    :returns: True when one of its components is sensitive.
    """
    return any(is_sensitive_name(part) for part in path.parts)


def output_cap(ctx: ToolContext) -> int:
    """Return the result size cap in characters from the settings.

    :param ctx: the running tool's context.
    :returns: ``output_cap_chars``, or 50 000 when unset or not a positive integer.
    """
    value = ctx.settings.get("output_cap_chars", DEFAULT_OUTPUT_CAP)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return DEFAULT_OUTPUT_CAP
    return value


def cut_marker(cut: int) -> str:
    """Return the text that stands in for ``cut`` removed characters.

    :param cut: how many characters were removed.
    :returns: the marker line, e.g. ``\\n…[12,345 characters cut]…\\n``.
    """
    return f"\n…[{cut:,} characters cut]…\n"


def cut_plan(total: int, cap: int) -> tuple[int, int, str]:
    """Decide how much head and tail to keep of a ``total``-character text under ``cap``.

    The kept head, the marker and the kept tail together fit in ``cap`` whenever the cap is
    larger than the marker.

    :param total: length of the full text (must exceed ``cap``).
    :param cap: the maximum result length.
    :returns: ``(head_chars, tail_chars, marker)``.
    """
    keep = cap
    marker = cut_marker(total - keep)
    # The marker's length depends on the number it prints, so settle it in a few rounds.
    for _ in range(3):
        keep = max(cap - len(marker), 0)
        marker = cut_marker(total - keep)
    head = (keep + 1) // 2
    return head, keep - head, marker


def cap_text(text: str, cap: int) -> str:
    """Cut ``text`` to about ``cap`` characters, keeping its head and tail.

    :param text: the full result text.
    :param cap: the maximum length; texts not longer than this come back unchanged.
    :returns: the text, or its head, a cut marker and its tail.
    """
    if len(text) <= cap:
        return text
    head, tail, marker = cut_plan(len(text), cap)
    return text[:head] + marker + (text[len(text) - tail :] if tail else "")


class BoundedOutput:
    """Collect streamed output in bounded memory, keeping what :func:`cap_text` would keep."""

    def __init__(self, cap: int) -> None:
        """Create an empty collector.

        :param cap: the output cap the result will be cut to.
        """
        self._cap = cap
        self._head = ""
        self._tail: list[str] = []
        self._tail_len = 0
        self._dropped = 0

    def add(self, chunk: str) -> None:
        """Append a chunk of output.

        :param chunk: decoded text.
        """
        if len(self._head) < self._cap:
            room = self._cap - len(self._head)
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail.append(chunk)
        self._tail_len += len(chunk)
        if self._tail_len > 2 * self._cap:
            # Only the last ``cap`` characters can ever be shown; forget the rest of the middle.
            joined = "".join(self._tail)
            keep = joined[-self._cap :]
            self._dropped += len(joined) - len(keep)
            self._tail = [keep]
            self._tail_len = len(keep)

    @property
    def total(self) -> int:
        """Return how many characters were added in all."""
        return len(self._head) + self._dropped + self._tail_len

    def text(self) -> str:
        """Return the collected output, cut to the cap with head, marker and tail.

        :returns: the same text :func:`cap_text` gives for the whole output.
        """
        tail_text = "".join(self._tail)
        if self._dropped == 0:
            return cap_text(self._head + tail_text, self._cap)
        head, tail, marker = cut_plan(self.total, self._cap)
        return self._head[:head] + marker + (tail_text[len(tail_text) - tail :] if tail else "")


def str_arg(args: Mapping[str, Any], name: str, *, required: bool = True, empty_ok: bool = False) -> str:
    """Return a string argument, raising a tool error the model can act on.

    :param args: the call's arguments.
    :param name: the argument's name.
    :param required: whether a missing argument is an error (else ``""`` is returned).
    :param empty_ok: whether the empty string is acceptable.
    :returns: the value.
    """
    value = args.get(name)
    if value is None:
        if required:
            raise ToolError(f"missing required argument '{name}'")
        return ""
    if not isinstance(value, str):
        raise ToolError(f"'{name}' must be a string")
    if not value and required and not empty_ok:
        raise ToolError(f"'{name}' must not be empty")
    return value


def int_arg(args: Mapping[str, Any], name: str, default: int | None, *, minimum: int = 0) -> int | None:
    """Return an optional integer argument (floats with no fraction are accepted).

    :param args: the call's arguments.
    :param name: the argument's name.
    :param default: the value when the argument is missing or null.
    :param minimum: the smallest accepted value.
    :returns: the value or ``default``.
    """
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"'{name}' must be an integer")
    if value < minimum:
        raise ToolError(f"'{name}' must be at least {minimum}")
    return value


def bool_arg(args: Mapping[str, Any], name: str) -> bool:
    """Return an optional boolean argument (missing means False).

    :param args: the call's arguments.
    :param name: the argument's name.
    :returns: the value.
    """
    value = args.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ToolError(f"'{name}' must be true or false")
    return value


def display_path(path: PurePath, ctx: ToolContext) -> str:
    """Return ``path`` relative to the session's cwd when it lies inside it, else absolute.

    :param path: an absolute path.
    :param ctx: the running tool's context.
    :returns: a short path for results.
    """
    for base in (ctx.cwd, ctx.cwd.resolve()):
        try:
            rel = path.relative_to(base)
        except ValueError:
            continue
        return rel.as_posix() or "."
    return str(path)
