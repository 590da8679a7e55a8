"""Read and write ``.env`` files: ``KEY="value"`` lines loaded below the real environment.

Accepted lines: blank lines, ``# comments``, ``KEY=value``, ``KEY="value"`` (``\\"`` and ``\\\\``
escapes), ``KEY='value'`` (literal) and any of these prefixed with ``export``. Unquoted values end
at an inline `` #`` comment. Lines that fit none of these are skipped with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LINE_RE = re.compile(r"\s*(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<rest>.*)$")


@dataclass(slots=True)
class DotEnv:
    """The variables of one ``.env`` file and the problems met reading it."""

    values: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _parse_double_quoted(rest: str) -> tuple[str, str] | None:
    """Split ``"value" tail`` into the unescaped value and the tail, or None if unterminated."""
    out: list[str] = []
    i = 1
    while i < len(rest):
        ch = rest[i]
        if ch == "\\" and i + 1 < len(rest) and rest[i + 1] in '"\\':
            out.append(rest[i + 1])
            i += 2
            continue
        if ch == '"':
            return "".join(out), rest[i + 1 :]
        out.append(ch)
        i += 1
    return None


def parse_line(line: str) -> tuple[str, str] | str | None:
    """Parse one line.

    :returns: ``(key, value)``; None for a blank or comment line; an error message otherwise.
    """
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    match = _LINE_RE.match(line)
    if match is None:
        return "expected KEY=value"
    key, rest = match.group("key"), match.group("rest").rstrip()
    tail = ""
    if rest.startswith('"'):
        parsed = _parse_double_quoted(rest)
        if parsed is None:
            return "unterminated double quote"
        value, tail = parsed
    elif rest.startswith("'"):
        end = rest.find("'", 1)
        if end < 0:
            return "unterminated single quote"
        value, tail = rest[1:end], rest[end + 1 :]
    else:
        # An unquoted value ends where an inline comment starts (a '#' after whitespace).
        value = re.split(r"\s#", rest, maxsplit=1)[0].strip()
    tail = tail.strip()
    if tail and not tail.startswith("#"):
        return "unexpected text after the closing quote"
    return key, value


def read_dotenv(path: Path) -> DotEnv:
    """Read a ``.env`` file; a missing file is empty.

    :param path: the file.
    :returns: the variables (a later line wins over an earlier one) and any warnings.
    """
    result = DotEnv()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return result
    for number, line in enumerate(text.splitlines(), start=1):
        parsed = parse_line(line)
        if parsed is None:
            continue
        if isinstance(parsed, str):
            result.warnings.append(f"{path}, line {number}: {parsed}; line ignored")
            continue
        key, value = parsed
        result.values[key] = value
    return result


def merged_environment(dotenv: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """Layer ``.env`` below the real environment: a variable already set wins.

    :returns: a new mapping; the process environment is left untouched.
    """
    merged = dict(dotenv)
    merged.update(environ)
    return merged


def quote_value(value: str) -> str:
    """Return ``value`` double-quoted with ``"`` and ``\\`` escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def check_entry(name: str, value: str) -> None:
    """Reject a variable name or value that cannot be written as one ``.env`` line.

    :raises hermes_core.errors.InvalidValue: bad name, or a value with a line break or NUL.
    """
    from hermes_core.errors import InvalidValue

    if not NAME_RE.fullmatch(name):
        raise InvalidValue(name, message=f"invalid environment variable name: {name!r}")
    if any(ch in value for ch in ("\n", "\r", "\x00")):
        raise InvalidValue(name, message=f"the value of {name} must not contain a line break")


def write_dotenv_entry(path: Path, name: str, value: str) -> None:
    """Set ``NAME="value"`` in a ``.env`` file, keeping every other line as it was.

    The first line defining ``name`` is replaced and later ones removed; otherwise the entry is
    appended. The file is rewritten atomically with mode 0600.

    :raises hermes_core.errors.InvalidValue: before anything is written, for a value with a
        line break or a bad name.
    """
    from hermes_cli.atomic import write_private_atomic

    check_entry(name, value)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    entry = f"{name}={quote_value(value)}"
    out: list[str] = []
    placed = False
    for line in lines:
        parsed = parse_line(line)
        if isinstance(parsed, tuple) and parsed[0] == name:
            if not placed:
                out.append(entry)
                placed = True
            continue
        out.append(line)
    if not placed:
        out.append(entry)
    write_private_atomic(path, "\n".join(out) + "\n")
