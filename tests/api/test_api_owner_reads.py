"""A session the chat index made for this request cannot have an owner record, so a configured
key opens it without reading one (issue #30: one storage round trip less per stateless request);
a session named by the caller is still checked, and a tenant still claims a new one."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from hermes_api_server.session_owners import SessionOwners


class Space:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def get(self, key: str) -> Any:
        self.calls.append(f"get {key}")
        return None

    async def claim(self, key: str, value: Any, *, owner: str) -> Any:
        self.calls.append(f"claim {key}")
        return SimpleNamespace(won=True, record=SimpleNamespace(owner=owner))


class Records:
    def __init__(self) -> None:
        self.area = Space()

    def space(self, name: str) -> Space:
        return self.area


async def _missing(session_id: str) -> bool:
    return False


@pytest.mark.asyncio
async def test_a_configured_key_reads_no_owner_for_a_session_made_for_it() -> None:
    records = Records()
    owners = SessionOwners(records)  # type: ignore[arg-type]
    await owners.check("api-0123456789abcdef", "principal:key1", _missing, new=True)
    assert records.area.calls == []
    await owners.check("named", "principal:key1", _missing)
    assert records.area.calls == ["get named"]


@pytest.mark.asyncio
async def test_a_tenant_still_claims_a_session_made_for_it() -> None:
    records = Records()
    owners = SessionOwners(records)  # type: ignore[arg-type]
    await owners.check("api-fedcba9876543210", "tenant:acme", _missing, new=True)
    assert records.area.calls == ["claim api-fedcba9876543210"]
