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


async def test_a_tenants_new_session_is_claimed_without_asking_whether_it_exists() -> None:
    # An id made for this request (64 random bits) cannot name a stored session: the claim is
    # the only round trip (a stored key's first turn of a new chat waits on one write, not two).
    kernel = make_kernel(FakeProviderPlugin(FakeProvider()), settings={"model": "fake:model"})
    async with kernel.running():
        tenants = SessionTenants(kernel.records)
        asked: list[str] = []

        async def exists(session_id: str) -> bool:
            asked.append(session_id)
            return False

        assert await tenants.check("api-new", "tenant:acme", exists, new=True)
        assert asked == []
        assert await SessionTenants(kernel.records).tenant("api-new") == "acme"
        # An id the caller chose may name a session made before: that is still asked.
        assert await tenants.check("chosen", "tenant:acme", exists)
        assert asked == ["chosen"]
