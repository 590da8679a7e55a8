"""Family names: ``claude-sonnet-4`` stands for the newest ``claude-sonnet-4-…`` id a provider lists.

A listed id belongs to the family ``name`` when it is ``name`` followed by a separator (``-``,
``.``, ``_``, ``@``, ``:``) and more. What follows is read as a version: numbers compare as
numbers, an eight-digit date or ``latest`` only breaks ties between equal versions (so
``claude-sonnet-4-5`` is newer than the dated ``claude-sonnet-4-20250514``). An id whose tail holds
a word (``gpt-4.1-mini``) is a variant, not a version: it is picked only when it is the family's
only member, and two members with the same version are a tie the caller must break.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_SEPARATORS = "-._@:"
_TOKEN = re.compile(r"[^-._@:]+")
_DATE = re.compile(r"\d{8}")


def members(name: str, ids: Sequence[str]) -> list[str]:
    """Return the ids that extend ``name`` past a separator, in the given order."""
    if not name:
        return []
    return [i for i in ids if len(i) > len(name) + 1 and i.startswith(name) and i[len(name)] in _SEPARATORS]


def _version(name: str, model_id: str) -> tuple[tuple[int, ...], int] | None:
    """Return (version numbers, date rank) of a member, or None for a variant."""
    numbers: list[int] = []
    stamp = 0
    for token in _TOKEN.findall(model_id[len(name) + 1 :]):
        if _DATE.fullmatch(token):
            stamp = max(stamp, int(token))
        elif token == "latest":
            stamp = 99_999_999
        elif token.isdigit():
            numbers.append(int(token))
        else:
            return None
    return tuple(numbers), stamp


def newest(name: str, ids: Sequence[str]) -> tuple[str | None, list[str]]:
    """Pick the newest member of the family ``name`` among ``ids``.

    :returns: (the pick, []) when one member is clearly newest; (None, candidates) on a tie or
        when only variants match; (None, []) when nothing belongs to the family.
    """
    found = members(name, ids)
    if len(found) <= 1:
        return (found[0] if found else None), []
    versions = {m: _version(name, m) for m in found}
    ranked = sorted((v, m) for m, v in versions.items() if v is not None)
    if not ranked:
        return None, found
    best_version = ranked[-1][0]
    best = [m for v, m in ranked if v == best_version]
    if len(best) > 1:
        return None, best
    return best[0], []
