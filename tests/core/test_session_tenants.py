"""The kernel's table of session tenants (docs/reference/tui-gateway.md#tenants): what a stored
key makes is its tenant's, the rest is the default tenant's, and an answer is cached only when it
cannot change."""

from __future__ import annotations

from hermes_core import DEFAULT_TENANT, Principal, SessionTenants
from hermes_core.testing import FakeProvider, FakeProviderPlugin, make_kernel


def key_of(tenant: str) -> Principal:
    return Principal("0123456789ab", tenant, frozenset({"control"}), "tenant:" + tenant)


async def test_claims_and_what_each_tenant_sees() -> None:
    kernel = make_kernel(FakeProviderPlugin(FakeProvider()), settings={"model": "fake:model"})
    async with kernel.running():
        tenants = SessionTenants(kernel.records)
        await tenants.claim_new("s-acme", key_of("acme"))
        await tenants.claim_new("s-local", None)  # the local process claims nothing
        assert await tenants.tenant("s-acme") == "acme"
        assert await tenants.tenant("s-local") == DEFAULT_TENANT
        assert await tenants.seen(["s-acme", "s-local"], "acme") == {"s-acme"}
        assert await tenants.seen(["s-acme", "s-local"], DEFAULT_TENANT) == {"s-local"}
        # Another instance (a fresh table on the same records) reads the same answers.
        other = SessionTenants(kernel.records)
        assert await other.sees("s-acme", "acme") and not await other.sees("s-acme", "globex")


async def test_an_id_that_may_not_exist_yet_is_not_cached_as_unclaimed() -> None:
    kernel = make_kernel(FakeProviderPlugin(FakeProvider()), settings={"model": "fake:model"})
    async with kernel.running():
        gateway, api = SessionTenants(kernel.records), SessionTenants(kernel.records)
        # A client names an id nobody made yet: it reads as the default tenant's ...
        assert await gateway.sees("chosen-id", DEFAULT_TENANT, exists=False)
        # ... until a tenant makes a session under it (the API lets a caller choose the id).
        assert await api.check("chosen-id", "tenant:acme", lambda sid: _false())
        assert not await gateway.sees("chosen-id", DEFAULT_TENANT, exists=False)
        assert await gateway.sees("chosen-id", "acme")


async def _false() -> bool:
    return False
