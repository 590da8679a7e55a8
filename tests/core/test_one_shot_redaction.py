"""A failed one-shot call (title, summary, background prompt) never quotes a secret.

Turn failures were already masked; the error a one-shot call raised carried the upstream's text
as is, and ``/compress`` showed it on the CLI and in ACP. Through both HTTP providers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from hermes_core import ProviderError, SeedMessage
from tests.core.vendor_kernels import vendor_kernel
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import VENDORS, Vendor

TOKEN = "sk-abcdefghijklmnopqrstuvwxyz0123"
REGISTERED = "registered-secret-value-42"


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as up:
        yield up


@pytest.mark.parametrize("vendor", VENDORS, ids=[v.name for v in VENDORS])
async def test_a_one_shot_failure_is_masked(upstream: FakeUpstream, vendor: Vendor) -> None:
    async def refuse(request: web.Request) -> web.StreamResponse:
        message = f"quota gone for {TOKEN} ({REGISTERED})"
        return web.json_response({"error": {"message": message, "type": "api_error"}}, status=400)

    upstream.on("POST", vendor.chat_path, refuse)
    kernel = vendor_kernel(vendor, upstream)
    async with kernel.running():
        kernel.redactor.add(REGISTERED)
        with pytest.raises(ProviderError) as caught:
            await kernel.models.one_shot([SeedMessage("user", "sum it up")], system="Summarise.")
    text = str(caught.value)
    assert "quota gone" in text
    assert TOKEN not in text and REGISTERED not in text
    assert TOKEN not in caught.value.message and REGISTERED not in caught.value.message
    assert caught.value.kind == "upstream" and caught.value.status == 400
