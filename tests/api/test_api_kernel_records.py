"""The API server's records kept by the kernel's storage (docs/reference/api-server.md#persistence):
the same behaviour on the memory backend and on a SQLite file shared by two kernels; a backend
without records stops the server with a clear error instead of a silent file of its own."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from hermes_api_server.kernel_records import KernelApiRecords
from hermes_core import StorageUnsupported
from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel
from tests.api import records_checks

Check = Callable[[str, Any], Coroutine[Any, Any, None]]


@pytest.mark.parametrize("check", records_checks.CHECKS, ids=lambda c: c.__name__)
async def test_on_memory(check: Check, tmp_path: Path) -> None:
    await check("memory", tmp_path)
    assert list(tmp_path.iterdir()) == []  # memory storage writes no file


@pytest.mark.parametrize(
    "check", records_checks.CHECKS + records_checks.DURABLE_CHECKS, ids=lambda c: c.__name__
)
async def test_on_sqlite(check: Check, tmp_path: Path) -> None:
    await check("sqlite", tmp_path / "hermes.sqlite3")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("hermes.sqlite3")) == []


async def test_a_backend_without_records_is_refused_by_name() -> None:
    from hermes_core import StorageSpec, hookimpl
    from hermes_core.memory_storage import MemoryStorage

    class Bare:
        """A storage with sessions only (no records part)."""

        def __init__(self) -> None:
            self._inner = MemoryStorage()

        def __getattr__(self, name: str) -> Any:
            if name.endswith("_record") or name.endswith("_records"):
                raise AttributeError(name)
            return getattr(self._inner, name)

    class Plugin:
        hermes_plugin_name = "bare-storage"

        @hookimpl
        def hermes_storage_backends(self) -> StorageSpec:
            return StorageSpec(name="bare", factory=lambda **_: Bare(), kind="server")

    fake = FakeProviderPlugin(FakeProvider(lambda request: []))
    kernel = make_kernel(Plugin(), fake, settings={"model": "fake:model", "storage": {"backend": "bare"}})
    async with kernel.running():
        records = KernelApiRecords(kernel, 10, 60)
        assert records.shared is True  # a server backend: other instances may write too
        with pytest.raises(StorageUnsupported, match="'bare' does not keep records"):
            await records.open()


async def test_hermes_api_on_memory_storage_writes_no_database(make_server: Any, tmp_path: Path) -> None:
    """``hermes api`` with ``storage.backend = "memory"`` keeps its stored responses and runs in
    the kernel's memory records: they work, and no database file appears (there used to be an
    ``api_server.sqlite3``)."""
    from tests.api.api_helpers import call

    home = tmp_path / "home"
    server = make_server('[storage]\nbackend = "memory"\n', home=home)
    first = await call(server, "POST", "/v1/responses", {"model": "mock:echo", "input": "hi", "store": True})
    assert first.status == 200, first.text
    second = await call(
        server,
        "POST",
        "/v1/responses",
        {"model": "mock:echo", "input": "again", "previous_response_id": first.json["id"]},
    )
    assert second.status == 200, second.text
    got = await call(server, "GET", f"/v1/responses/{second.json['id']}")
    assert got.status == 200 and got.json["previous_response_id"] == first.json["id"]
    server.stop()
    assert sorted(p.name for p in home.rglob("*") if "sqlite" in p.name) == []
