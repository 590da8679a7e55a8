"""Family names: ``claude-sonnet-4`` stands for the newest ``claude-sonnet-4-…`` id a provider lists.

A listed id belongs to the family ``name`` when it is ``name`` followed by a separator (``-``,
``.``, ``_``, ``@``, ``:``) and more. What follows is read as a version: numbers compare as
numbers, an eight-digit date or ``latest`` only breaks ties between equal versions (so
``claude-sonnet-4-5`` is newer than the dated ``claude-sonnet-4-20250514``). An id whose tail holds
a word (``gpt-4.1-mini``) is a variant, not a version: it is picked only when it is the family's
only member, and two members with the same version are a tie the caller must break.

:func:`best_match` is what the resolver asks per provider: the exact id, else the id that is the
name after a ``vendor/`` prefix (OpenRouter's ``openai/gpt-4.1``), else the newest family member,
vendor prefixes set aside (``claude-sonnet-4`` → ``anthropic/claude-sonnet-4.6``).
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


EXACT, VENDOR_EXACT, FAMILY = 0, 1, 2
"""How well a name matched (lower is better): the id itself, the id after its ``vendor/``
prefix, or a member of the family the name stands for."""


def _short(model_id: str) -> str:
    """Return the id without its ``vendor/`` prefix (``anthropic/claude-sonnet-4.6`` →
    ``claude-sonnet-4.6``); an id without one is returned unchanged."""
    return model_id.split("/", 1)[1] if "/" in model_id else model_id


def best_match(name: str, ids: Sequence[str]) -> tuple[int, list[str]] | None:
    """Find what ``name`` means among one provider's ``ids``.

    In order: the exact id; an id that is ``name`` after a ``vendor/`` prefix (OpenRouter's
    ``openai/gpt-4.1`` for ``gpt-4.1``); the newest member of the family ``name`` stands for, where
    vendor-prefixed ids are compared without their prefix (the same version rules as
    :func:`newest`). A name that has a ``/`` itself is compared with whole ids only.

    :returns: ``(rank, ids)`` with one id when the answer is clear and several when they tie (or
        only variants match); ``None`` when nothing matches. ``rank`` is :data:`EXACT`,
        :data:`VENDOR_EXACT` or :data:`FAMILY`.
    """
    if not name:
        return None
    if name in ids:
        return EXACT, [name]
    if "/" in name:
        forms = {i: i for i in ids}
    else:
        forms = {i: _short(i) for i in ids}
        same = [i for i in ids if i != name and forms[i] == name]
        if same:
            return VENDOR_EXACT, same
    unique = list(dict.fromkeys(forms.values()))
    pick, tied = newest(name, unique)
    chosen = [pick] if pick is not None else tied
    if not chosen:
        return None
    # One short form may stand for several vendors' ids (``a/m-2`` and ``b/m-2``): a tie.
    return FAMILY, [i for i in ids if forms[i] in chosen]
