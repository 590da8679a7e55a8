"""The API server's records over a real kernel: ``KernelApiRecords`` handles on kernels that share
one storage backend (two handles = two instances of ``hermes api``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from hermes_api_server.kernel_records import KernelApiRecords
from hermes_core import Kernel
from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel


def _fake() -> FakeProviderPlugin:
    return FakeProviderPlugin(FakeProvider(lambda request: []))


def kernel_on(backend: str, where: str | Path) -> Kernel:
    """A kernel on ``memory``, ``sqlite`` (``where`` the file) or ``postgres`` (``where`` the DSN)."""
    if backend == "memory":
        return make_kernel(_fake(), settings={"model": "fake:model"})
    if backend == "sqlite":
        from hermes_sqlite import plugin as sqlite_plugin

        storage = {"backend": "sqlite", "path": str(where)}
        return make_kernel(sqlite_plugin, _fake(), settings={"model": "fake:model", "storage": storage})
    from hermes_postgres import plugin as pg_plugin

    server: dict[str, Any] = {"backend": "postgres", "dsn": str(where), "pool_size": 3}
    return make_kernel(pg_plugin, _fake(), settings={"model": "fake:model", "storage": server})


@contextlib.asynccontextmanager
async def api_records(
    backend: str,
    where: str | Path,
    count: int = 1,
    max_responses: int = 100,
    retention_s: float = 86400,
    chat_ttl_s: float = 86400,
) -> AsyncIterator[list[KernelApiRecords]]:
    """Yield ``count`` opened record handles, each on a kernel of its own over one backend (the
    memory backend cannot be shared: ``count`` handles then share one kernel)."""
    async with contextlib.AsyncExitStack() as stack:
        kernels: list[Kernel] = []
        for _ in range(count):
            if backend == "memory" and kernels:
                kernels.append(kernels[0])
                continue
            kernel = kernel_on(backend, where)
            await stack.enter_async_context(kernel.running())
            kernels.append(kernel)
        handles = [KernelApiRecords(k, max_responses, retention_s, chat_ttl_s) for k in kernels]
        for handle in handles:
            await handle.open()
            stack.push_async_callback(handle.close)
        yield handles
