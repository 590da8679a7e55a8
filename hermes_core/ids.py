"""Ids of sessions, turns, segments and queue items.

``secrets.token_hex`` asks the kernel for randomness on every call (a system call each time);
turn, segment and item ids only need to be distinct, so a seeded generator serves them at a
fraction of the cost. Session ids are minted once per session and do use ``secrets``.

This module imports nothing heavy, so a transport can mint a session id before the kernel loads.
"""

from __future__ import annotations

import datetime as _dt
import random
import secrets

_random = random.Random()  # seeded from the OS at import


def short_id(prefix: str, hex_chars: int = 12) -> str:
    """Return ``prefix`` followed by ``hex_chars`` random lowercase hex digits.

    :param prefix: e.g. ``t_`` or ``seg_``.
    :param hex_chars: how many hex digits (the format of ``secrets.token_hex(hex_chars // 2)``).
    :returns: the id.
    """
    return f"{prefix}{_random.getrandbits(hex_chars * 4):0{hex_chars}x}"


def mint_session_id() -> str:
    """Return a new session id ``YYYYMMDD_HHMMSS_xxxxxx`` (UTC time, 6 lowercase hex;
    docs/reference/core.md#session-ids)."""
    now = _dt.datetime.now(_dt.UTC)
    return f"{now:%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"
