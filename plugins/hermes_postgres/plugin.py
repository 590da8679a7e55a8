"""Register the PostgreSQL storage backend (``storage.backend = "postgres"``).

Cheap to import: psycopg and the implementation load only when the kernel builds the backend.
"""

from __future__ import annotations

from typing import Any

from hermes_core import ConfigError, StorageSpec, hookimpl

DSN_VARIABLE = "HERMES_POSTGRES_DSN"


def make_storage(*, dsn: str | None, pool_size: int, pool_timeout_s: float, read_only: bool = False) -> Any:
    """Build an unopened PostgreSQL storage.

    :param dsn: the server, as a ``postgresql://`` URL or a libpq key/value string.
    :param pool_size: most connections this process holds.
    :param pool_timeout_s: how long a call waits for a free connection before it fails.
    :param read_only: open without changing anything (checks).
    :returns: a ``Storage`` backend; the kernel calls ``open()`` on it.
    :raises ConfigError: when no server is named.
    """
    if not dsn:
        raise ConfigError(
            f'storage.backend = "postgres" needs a server: set {DSN_VARIABLE} or storage.dsn '
            "(e.g. postgresql://user@host:5432/hermes)"
        )
    from hermes_postgres.store import PostgresStorage

    return PostgresStorage(dsn, pool_size=pool_size, pool_timeout_s=pool_timeout_s, read_only=read_only)


@hookimpl
def hermes_storage_backends() -> StorageSpec:
    """Declare the ``postgres`` storage backend.

    :returns: its spec.
    """
    return StorageSpec(name="postgres", factory=make_storage, kind="server", env={"dsn": DSN_VARIABLE})
