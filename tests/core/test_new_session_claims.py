"""A new session's claimed records (its tenant's claim of its id) are stored by its first write,
in the same transaction, or beside its lease when the lease is taken before that write; a claim
that cannot be stored leaves nothing behind (docs/reference/core.md#writer-lease)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core import DEFAULT_TENANT, Kernel, NewRow, SessionTenants, StorageError
from hermes_core.session_tenants import NAMESPACE
from hermes_core.testing import make_kernel
from tests.core.conftest import collect


@pytest.fixture(params=["sqlite", "memory"])
async def k(request: Any, tmp_path: Path) -> AsyncIterator[Kernel]:
    storage = {"backend": "sqlite", "path": str(tmp_path / "h.sqlite3")} if request.param == "sqlite" else {}
    kernel = make_kernel(
        entry_points=["mock", "tools", "sqlite"], settings={"storage": storage} if storage else {}
    )
    async with kernel.running():
        yield kernel


async def _open(kernel: Kernel, session_id: str, owner: str, workspace: Path) -> Any:
    claim = SessionTenants(kernel.records).new_claim(session_id, owner)
    return await kernel.open_session(
        session_id, source="api", owner=owner, cwd=workspace, new=True, claims=(claim,) if claim else ()
    )


async def test_a_tenants_claim_is_stored_by_the_first_write_and_not_before(
    k: Kernel, workspace: Path
) -> None:
    assert SessionTenants(k.records).new_claim("api-00000000000000c0", "principal:abc") is None
    session = await _open(k, "api-00000000000000c1", "tenant:acme", workspace)
    space = k.records.space(NAMESPACE)
    assert await space.get("api-00000000000000c1") is None  # opening writes nothing
    await collect(await session.submit("hello", owner="tenant:acme"))
    claimed = await space.get("api-00000000000000c1")
    assert claimed is not None and claimed.owner == "tenant:acme"
    assert await SessionTenants(k.records).tenant("api-00000000000000c1") == "acme"
    await session.close()
    stored = await k.storage.get_session("api-00000000000000c1")
    assert stored is not None and stored.message_count == 2


async def test_a_claim_that_cannot_be_stored_stores_nothing(k: Kernel, workspace: Path) -> None:
    """Should the id's record be there already (nobody can know the id, but say someone does),
    the first write fails as on a lease held elsewhere: no session, no row, the record untouched."""
    space = k.records.space(NAMESPACE)
    await space.claim("api-00000000000000c2", {}, owner="tenant:globex")
    session = await _open(k, "api-00000000000000c2", "tenant:acme", workspace)
    with pytest.raises(StorageError):
        await session.append_rows([NewRow(role="user", content="hi")])
    assert session.state.lease_failed
    assert await k.storage.get_session("api-00000000000000c2") is None
    held = await space.get("api-00000000000000c2")
    assert held is not None and held.owner == "tenant:globex"
    await session.close()


async def test_a_lease_taken_before_the_first_write_stores_the_claim_beside_it(
    k: Kernel, workspace: Path
) -> None:
    """The id revealed early (``take_lease_now``): its claim is stored by then, and a claim held
    by another tenant fails the lease, so the id is never revealed."""
    space = k.records.space(NAMESPACE)
    session = await _open(k, "api-00000000000000c3", "tenant:acme", workspace)
    await session.take_lease_now()
    claimed = await space.get("api-00000000000000c3")
    assert claimed is not None and claimed.owner == "tenant:acme"
    await collect(await session.submit("hello", owner="tenant:acme"))
    await session.close()
    assert await SessionTenants(k.records).tenant("api-00000000000000c3") == "acme"

    await space.claim("api-00000000000000c4", {}, owner="tenant:globex")
    refused = await _open(k, "api-00000000000000c4", "tenant:acme", workspace)
    with pytest.raises(StorageError, match="cannot store its claim"):
        await refused.take_lease_now()
    assert refused.state.lease_failed
    await refused.close()
    assert await k.storage.get_session("api-00000000000000c4") is None
    assert await SessionTenants(k.records).tenant("api-00000000000000c5") == DEFAULT_TENANT
