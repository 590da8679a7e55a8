"""Register the embedded SQLite storage backend (``storage.backend = "sqlite"``).

Cheap to import: the implementation is imported only when the kernel builds the backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_core import StorageSpec, hookimpl


def make_storage(path: Path, *, read_only: bool = False) -> Any:
    """Build an unopened SQLite storage for the database at ``path``.

    :param path: the database file, by default ``<data dir>/hermes.sqlite3``.
    :param read_only: open without write access (health checks).
    :returns: a ``Storage`` backend; the kernel calls ``open()`` on it.
    """
    from hermes_sqlite.store import SqliteStorage

    return SqliteStorage(Path(path), read_only=read_only)


@hookimpl
def hermes_storage_backends() -> StorageSpec:
    """Declare the ``sqlite`` storage backend.

    :returns: its spec.
    """
    return StorageSpec(name="sqlite", factory=make_storage)
