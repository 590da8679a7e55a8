"""Atomic, private file writes shared by ``config.toml`` and ``.env``."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_private_atomic(path: Path, data: str) -> None:
    """Replace ``path`` with ``data`` in one step, readable by the owner only (mode 0600).

    The text goes to a temporary file in the same directory, which is then renamed over the
    target, so a reader sees the old file or the new one, never half of it.

    :param path: the file to replace (its directory is created when missing).
    :param data: the new contents.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o600)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
