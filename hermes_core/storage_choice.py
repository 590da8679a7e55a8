"""Choosing the storage backend the settings name (``memory`` or a plugin's, file or server)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from hermes_core.errors import ConfigError

if TYPE_CHECKING:
    from hermes_core.records import ServerStorageFactory, StorageFactory
    from hermes_core.registry import Registry
    from hermes_core.settings import CoreSettings
    from hermes_core.storage import Storage


def make_storage(registry: Registry, settings: CoreSettings) -> Storage:
    """Build (not open) the backend ``settings.storage`` names.

    :raises ConfigError: an unknown backend, or a file backend with neither ``storage.path`` nor
        ``data_dir`` (in-memory storage is only ever chosen by name).
    """
    backend = settings.storage.backend
    if backend == "memory":
        from hermes_core.memory_storage import MemoryStorage

        return MemoryStorage()
    spec = registry.storage.get(backend)
    if spec is None:
        known = ", ".join(["memory", *registry.storage]) or "memory"
        raise ConfigError(f"unknown storage backend {backend!r}; available: {known}")
    if spec.kind == "server":
        server = cast("ServerStorageFactory", spec.factory)
        options = settings.storage
        built: Storage = server(
            dsn=options.dsn,
            pool_size=options.pool_size,
            pool_timeout_s=options.pool_timeout_s,
            **({"read_only": True} if options.read_only else {}),
        )
        return built
    factory = cast("StorageFactory", spec.factory)
    path = settings.storage.path
    if path is None:
        if settings.data_dir is None:
            # Never fall back to memory behind the caller's back: sessions they meant to keep
            # would be gone at exit without a word.
            raise ConfigError(
                f"storage backend {backend!r} needs a place for its file: set data_dir (the file is "
                f"<data_dir>/hermes.sqlite3) or storage.path, or choose storage.backend = 'memory' "
                "to keep sessions in memory only"
            )
        path = settings.data_dir / "hermes.sqlite3"
    if settings.storage.read_only:
        # Only asked for when configured, so backends without the flag keep working.
        read_only: Storage = factory(path=Path(path), read_only=True)
        return read_only
    storage: Storage = factory(path=Path(path))
    return storage
