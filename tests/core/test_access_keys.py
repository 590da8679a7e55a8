"""``hermes_core.AccessKeys`` (docs/reference/api-server.md#scoped-keys) on the kernel's records:
only a hash is stored, a wrong secret with a right id is refused, scopes and durations are checked,
and an expired or revoked key stops working."""

from __future__ import annotations

import json

import pytest

from hermes_core import AccessKeys, InvalidValue, parse_duration, parse_scopes
from hermes_core.testing import make_kernel
from tests.timing import eventually


async def test_keys_store_a_hash_and_refuse_wrong_revoked_and_expired_secrets() -> None:
    kernel = make_kernel(entry_points=["mock"], settings={"model": "mock:echo"})
    async with kernel.running():
        keys = AccessKeys(kernel.records, cache_s=0.0)
        secret, info = await keys.create("acme", "approve,observe")
        assert info.scopes == ("observe", "approve") and info.tenant == "acme" and info.expires_at is None
        stored = await kernel.records.space("api.keys").get(info.id)
        assert stored is not None and secret not in stored.data and secret[17:] not in stored.data
        assert set(json.loads(stored.data)) == {"hash", "tenant", "scopes", "created_at", "expires_at"}
        who = await keys.authenticate(secret)
        assert who is not None and (who.key_id, who.tenant, who.owner) == (info.id, "acme", "tenant:acme")
        assert who.allows("observe") and who.allows("approve") and not who.allows("control")
        assert not who.operator
        assert await keys.authenticate(secret[:-1] + ("A" if secret[-1] != "A" else "B")) is None
        assert await keys.authenticate("hks_000000000000_nope") is None
        assert await keys.authenticate("not-a-key") is None
        assert [k.id for k in await keys.list("acme")] == [info.id] and await keys.list("globex") == []
        assert not await keys.revoke(info.id, tenant="globex")  # another tenant's admin: unknown
        assert await keys.authenticate(secret) is not None
        assert await keys.revoke(info.id)
        assert await keys.authenticate(secret) is None and not await keys.revoke(info.id)
        admin_secret, _ = await keys.create("default", ["admin"])
        admin = await keys.authenticate(admin_secret)
        assert admin is not None and admin.operator and admin.allows("control")
        short, _ = await keys.create("acme", ["observe"], ttl_s=0.2)
        assert await keys.authenticate(short) is not None
        await eventually(lambda: _refused(keys, short), what="the expired key refused")


async def _refused(keys: AccessKeys, secret: str) -> bool:
    return await keys.authenticate(secret) is None


def test_scopes_tenants_and_durations_are_checked() -> None:
    assert parse_scopes(" admin , observe") == ("observe", "admin")
    assert (
        parse_duration("30d") == 30 * 86400
        and parse_duration("90") == 90
        and parse_duration("2w") == 14 * 86400
    )
    for bad in ("", "observe,root", ","):
        with pytest.raises(InvalidValue):
            parse_scopes(bad)
    for bad in ("", "0d", "soon", "-1h", "1y"):
        with pytest.raises(InvalidValue):
            parse_duration(bad)


async def test_bad_tenants_are_refused() -> None:
    kernel = make_kernel(entry_points=["mock"], settings={"model": "mock:echo"})
    async with kernel.running():
        keys = AccessKeys(kernel.records)
        for bad in ("", "Acme", "a b", "-x", "x" * 65):
            with pytest.raises(InvalidValue):
                await keys.create(bad, ["observe"])
