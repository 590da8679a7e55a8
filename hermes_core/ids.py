"""Ids of turns, segments and queue items: unique enough, never secret.

``secrets.token_hex`` asks the kernel for randomness on every call (a system call each time);
these ids only need to be distinct, so a seeded generator serves them at a fraction of the cost.
"""

from __future__ import annotations

import random

_random = random.Random()  # seeded from the OS at import


def short_id(prefix: str, hex_chars: int = 12) -> str:
    """Return ``prefix`` followed by ``hex_chars`` random lowercase hex digits.

    :param prefix: e.g. ``t_`` or ``seg_``.
    :param hex_chars: how many hex digits (the format of ``secrets.token_hex(hex_chars // 2)``).
    :returns: the id.
    """
    return f"{prefix}{_random.getrandbits(hex_chars * 4):0{hex_chars}x}"
