"""The grammar of client-chosen session ids (docs/reference/core.md#session-ids), checked before anything
loads."""

from __future__ import annotations

import re

SESSION_ID_RE = re.compile(r"[A-Za-z0-9_:.\-]{1,256}")


def session_id_problem(session_id: str) -> str | None:
    """Return why ``session_id`` is not acceptable, or None when it is."""
    if not SESSION_ID_RE.fullmatch(session_id) or session_id in (".", ".."):
        return (
            f"invalid session id {session_id!r}: use 1-256 characters of A-Z a-z 0-9 _ : . - "
            "(not '.' or '..')"
        )
    return None
