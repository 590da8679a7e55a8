"""What a turn has denied, so the same effect is not retried another way
(docs/reference/core.md#denials-hold-for-the-turn).

One :class:`DenialMemory` lives for one turn. Rule 1 refuses a call with the same effect as a
denied one: the same approval key, the same absolute path through any file tool, or a terminal
command that mentions a denied path (absolute, workspace-relative or ``~/…``) or contains a
denied command. Rule 2 (every later change asks) only needs :attr:`DenialMemory.any`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_core.approvals.paths import resolve_path

if TYPE_CHECKING:
    from hermes_core.approvals import CallFacts

__all__ = ["DenialMemory"]

# Characters that continue a file name: a mention of "a.txt" inside "data.txt" or "a.txt2"
# is another file. A "/" after the name still matches, so a denied directory covers its files.
_NAME_CHAR = r"A-Za-z0-9_.\-"
_TAIL = rf"(?![{_NAME_CHAR}])"


def _mention_pattern(form: str) -> re.Pattern[str]:
    """Return a pattern finding ``form`` as a whole path in command text."""
    if form.startswith("/"):
        return re.compile(rf"(?<![{_NAME_CHAR}]){re.escape(form)}{_TAIL}")
    # A relative spelling must start the path: "src/a.txt" is not "a.txt", "./a.txt" is.
    return re.compile(rf"(?<![{_NAME_CHAR}/])(?:\./|\$PWD/|\$\{{PWD\}}/)*{re.escape(form)}{_TAIL}")


def _normalize_command(command: str) -> str:
    return " ".join(command.split())


def _path_forms(path: Path, workspace: Path | None) -> set[str]:
    """Return the spellings of ``path`` a shell command might use."""
    forms = {str(path)}
    if workspace is not None and path.is_relative_to(workspace) and path != workspace:
        forms.add(str(path.relative_to(workspace)))
    try:
        home = Path.home()
    except (OSError, RuntimeError, KeyError):  # no resolvable home directory
        home = None
    if home is not None and path.is_relative_to(home) and path != home:
        rel = path.relative_to(home)
        forms.update({f"~/{rel}", f"$HOME/{rel}", f"${{HOME}}/{rel}"})
    return forms


class DenialMemory:
    """The denials of one turn."""

    def __init__(self) -> None:
        self._count = 0
        self._keys: set[str] = set()
        self._paths: set[Path] = set()
        self._commands: set[str] = set()
        self._mentions: dict[str, re.Pattern[str]] = {}

    @property
    def any(self) -> bool:
        """Tell whether anything was denied in this turn (rule 2)."""
        return self._count > 0

    def record(self, facts: CallFacts, keys: Sequence[str]) -> None:
        """Remember a denied call.

        :param facts: the call that was denied (by an answer, expiry, a policy, …).
        :param keys: its approval keys.
        """
        self._count += 1
        self._keys.update(keys)
        workspace = resolve_path(facts.workspace)
        for path in facts.paths:
            for candidate in {path, resolve_path(path, workspace)}:
                if candidate is None or not candidate.is_absolute():
                    continue
                self._paths.add(candidate)
                for form in _path_forms(candidate, workspace):
                    if form not in self._mentions:
                        self._mentions[form] = _mention_pattern(form)
        if facts.command is not None:
            command = _normalize_command(facts.command)
            if command:
                self._commands.add(command)

    def blocks(self, facts: CallFacts, keys: Sequence[str]) -> bool:
        """Tell whether rule 1 refuses this call ("Denied earlier in this turn").

        :param facts: the call about to run.
        :param keys: its approval keys.
        :returns: ``True`` when it has the same effect as a denied call.
        """
        if not self._count:
            return False
        if any(key in self._keys for key in keys):
            return True
        workspace = resolve_path(facts.workspace)
        for path in facts.paths:
            if path in self._paths or resolve_path(path, workspace) in self._paths:
                return True
        if facts.command is not None:
            command = _normalize_command(facts.command)
            if any(denied in command for denied in self._commands):
                return True
            if any(pattern.search(facts.command) for pattern in self._mentions.values()):
                return True
        return False
