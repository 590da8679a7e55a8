"""pi's ``sessionFile``: a path that names a Hermes session (docs/reference/pi.md#sessions).

pi keeps each session in a JSONL file and its clients pass that path back (``--session PATH``,
``switch_session``). Hermes keeps sessions in its own storage, so the file here is a locator:
``<session dir>/<session id>.jsonl``, holding only pi's one-line session header (``type:
"session"``, the id, the workspace). Reading a path back takes the id from that header, else
from the file name. The transcript itself is never written to it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
from pathlib import Path

SUFFIX = ".jsonl"


def looks_like_path(arg: str) -> bool:
    """Tell whether ``--session`` names a file (pi's rule: a separator or the ``.jsonl`` suffix)."""
    return "/" in arg or "\\" in arg or arg.endswith(SUFFIX)


def session_file(session_dir: Path | None, session_id: str) -> str | None:
    """Return the locator path of a session, or None when there is no session directory."""
    if session_dir is None:
        return None
    return str(session_dir / f"{session_id}{SUFFIX}")


def id_from_path(path: Path) -> str:
    """Return the session id a locator names: its header's ``id``, else the file name's stem."""
    with contextlib.suppress(OSError, ValueError):
        with path.open(encoding="utf-8") as fh:
            header = json.loads(fh.readline())
        if isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("id"), str):
            return str(header["id"])
    name = path.name
    return name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name


def write_header(path: Path, session_id: str, cwd: str, created_at: float) -> None:
    """Write the locator (pi's session header line) unless it exists; atomic, parents made."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.fromtimestamp(created_at or 0, _dt.UTC).isoformat(timespec="milliseconds")
    header = {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": stamp.replace("+00:00", "Z"),
        "cwd": cwd,
    }
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(header) + "\n", encoding="utf-8")
    os.replace(tmp, path)
