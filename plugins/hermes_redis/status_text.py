"""How a run's status is kept in its Redis record (the ``status`` field of ``keys.run_record``).

One line of the bus's own, the fields of ``hermes_core.RunStatus`` the bus reads (a JSON array:
last seq, state, error code, session id), then the caller's document exactly as it was given.
The bus reads its own line and never parses the document.
"""

from __future__ import annotations

import json

from hermes_core import RunStatus


def encode(status: RunStatus) -> str:
    """Return the record text of ``status``."""
    head = json.dumps(
        [status.last_seq, status.status, status.error_code, status.session_id], separators=(",", ":")
    )
    return f"{head}\n{status.document}"


def decode(text: str | None) -> RunStatus:
    """Return the status a record holds (an empty document when it holds none)."""
    if not text:
        return RunStatus("{}")
    head, sep, document = text.partition("\n")
    if not sep or not head.startswith("["):
        return RunStatus(text)  # written without the bus's line: only the document is known
    last_seq, state, error_code, session_id = json.loads(head)
    return RunStatus(
        document,
        last_seq=int(last_seq or 0),
        status=str(state or ""),
        error_code=error_code if isinstance(error_code, str) else None,
        session_id=str(session_id or ""),
    )
