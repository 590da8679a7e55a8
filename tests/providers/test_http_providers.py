"""What both HTTP providers do alike, run once per vendor against a fake upstream on loopback.

HTTP error statuses, stalls, cut or unfinished streams, dead endpoints, secrets in messages,
session reuse, model-list probes and cheap imports behave the same for ``openai`` and
``anthropic``; the vendor modules test what differs (wire format, decoding, in-stream errors).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Any

import pytest
from aiohttp import web

from hermes_core import ProviderError, TextChunk
from tests.providers.upstream_fakes import FakeUpstream, closed_port
from tests.providers.vendors import VENDORS, Vendor, assert_hidden, collect, failure
from tests.timing import scaled


@pytest.fixture(params=VENDORS, ids=[v.name for v in VENDORS])
def vendor(request: pytest.FixtureRequest) -> Vendor:
    return request.param


async def probe_failure(provider: Any, timeout: float) -> ProviderError:
    """Run a probe that must fail, then close the provider; return the error."""
    try:
        with pytest.raises(ProviderError) as info:
            await provider.probe(timeout)
    finally:
        await provider.aclose()
    return info.value


# --- HTTP errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [(401, "auth", False), (403, "auth", False), (429, "rate_limit", True), (500, "upstream", True),
     (529, "upstream", True), (400, "upstream", False), (404, "upstream", False)],
)  # fmt: skip
async def test_an_http_error_status_is_a_provider_error_carrying_the_upstream_message(
    upstream: FakeUpstream, vendor: Vendor, status: int, kind: str, retryable: bool
) -> None:
    body = vendor.error_body("upstream_refused", f"Request refused for key {vendor.key}.")
    upstream.json("POST", vendor.chat_path, body, status=status, headers={"Retry-After": "7"})
    error, seen = await failure(vendor.provider(upstream), vendor.hello())
    assert seen == []
    assert (error.kind, error.retryable, error.status) == (kind, retryable, status)
    assert error.retry_after == (7.0 if retryable else None)  # only worth saying when retried
    assert error.message.startswith(f"{vendor.name}: ")
    assert "Request refused for key" in error.message
    assert_hidden([vendor.key], error)


async def test_401_without_a_key_says_which_variable_to_set(upstream: FakeUpstream, vendor: Vendor) -> None:
    upstream.json(
        "POST", vendor.chat_path, vendor.error_body("authentication_error", "Missing key"), status=401
    )
    provider = vendor.make_provider({"base_url": vendor.root(upstream.url)}, name=vendor.name)
    error, _ = await failure(provider, vendor.hello())
    assert error.kind == "auth"
    assert vendor.key_variable in error.message
    assert vendor.key_header not in upstream.last().headers  # no key configured, none sent


async def test_an_html_error_page_still_gives_a_readable_message(
    upstream: FakeUpstream, vendor: Vendor
) -> None:
    async def bad_gateway(request: web.Request) -> web.StreamResponse:
        return web.Response(
            status=502, text="<html><body>502 Bad Gateway</body></html>", content_type="text/html"
        )

    upstream.on("POST", vendor.chat_path, bad_gateway)
    error, _ = await failure(vendor.provider(upstream), vendor.hello())
    assert (error.kind, error.retryable) == ("upstream", True)
    assert "502" in error.message


# --- stream and connection failures --------------------------------------------------------


async def test_a_stall_fails_with_network_within_the_stall_timeout(
    upstream: FakeUpstream, vendor: Vendor
) -> None:
    upstream.stream(vendor.chat_path, vendor.partial("first"), then="stall")
    started = time.monotonic()
    error, seen = await failure(vendor.provider(upstream, stall_timeout_s=0.3), vendor.hello())
    assert seen == [TextChunk("first")]
    assert (error.kind, error.retryable) == ("network", False)
    assert "stalled" in error.message
    assert time.monotonic() - started < scaled(2.0)


async def test_no_response_headers_fails_within_the_stall_timeout(
    upstream: FakeUpstream, vendor: Vendor
) -> None:
    upstream.silent("POST", vendor.chat_path)
    started = time.monotonic()
    error, _ = await failure(vendor.provider(upstream, stall_timeout_s=0.3), vendor.hello())
    assert error.kind == "network"
    assert time.monotonic() - started < scaled(2.0)


async def test_a_mid_stream_disconnect_is_a_network_error(upstream: FakeUpstream, vendor: Vendor) -> None:
    upstream.stream(vendor.chat_path, vendor.partial("partial"), then="abort")
    error, seen = await failure(vendor.provider(upstream), vendor.hello())
    assert seen == [TextChunk("partial")]
    assert (error.kind, error.retryable) == ("network", False)
    assert_hidden([vendor.key], error)


async def test_a_stream_that_ends_without_finishing_is_a_network_error(
    upstream: FakeUpstream, vendor: Vendor
) -> None:
    upstream.stream(vendor.chat_path, vendor.partial("partial"))
    error, seen = await failure(vendor.provider(upstream), vendor.hello())
    assert seen == [TextChunk("partial")]
    assert error.kind == "network"
    assert "ended before" in error.message


async def test_a_malformed_stream_is_a_network_error(upstream: FakeUpstream, vendor: Vendor) -> None:
    upstream.stream(vendor.chat_path, [*vendor.partial("ok"), b"data: {not json\n\n"])
    error, _ = await failure(vendor.provider(upstream), vendor.hello())
    assert error.kind == "network"
    assert "malformed" in error.message


async def test_connection_refused_is_a_network_error(vendor: Vendor) -> None:
    base_url = vendor.root(f"http://127.0.0.1:{closed_port()}")
    provider = vendor.make_provider({"api_key": vendor.key, "base_url": base_url}, name="local")
    started = time.monotonic()
    error, _ = await failure(provider, vendor.hello())
    assert (error.kind, error.retryable) == ("network", False)
    assert error.message.startswith("local: cannot connect to http://127.0.0.1:")
    assert time.monotonic() - started < scaled(2.0)
    assert_hidden([vendor.key], error)


async def test_credentials_in_the_base_url_never_reach_a_message(vendor: Vendor) -> None:
    port = closed_port()
    base_url = vendor.root(f"http://alice:hunter2secret@127.0.0.1:{port}") + "?token=abcdef"
    error, _ = await failure(vendor.make_provider({"base_url": base_url}, name="x"), vendor.hello())
    assert_hidden(["hunter2secret", "abcdef"], error)
    assert vendor.root(f"http://127.0.0.1:{port}") in error.message


async def test_an_interrupted_stream_returns_at_once(upstream: FakeUpstream, vendor: Vendor) -> None:
    upstream.stream(vendor.chat_path, vendor.partial("first"), then="stall")
    provider = vendor.provider(upstream, stall_timeout_s=30.0)
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in provider.stream(vendor.hello()):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 5)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < scaled(1.0)
    upstream.stream(vendor.chat_path, vendor.reply("again"))
    chunks = await collect(provider, vendor.hello())  # the provider is still usable
    assert chunks[0] == TextChunk("again")


async def test_the_provider_reopens_its_session_after_aclose(upstream: FakeUpstream, vendor: Vendor) -> None:
    upstream.stream(vendor.chat_path, vendor.reply("ok"))
    provider = vendor.provider(upstream)
    first = [c async for c in provider.stream(vendor.hello())]
    await provider.aclose()
    second = await collect(provider, vendor.hello())
    assert first == second
    assert len(upstream.requests) == 2


# --- model-list probes ---------------------------------------------------------------------


async def test_probe_of_a_dead_endpoint_fails_quickly(vendor: Vendor) -> None:
    provider = vendor.make_provider(
        {"base_url": vendor.root(f"http://127.0.0.1:{closed_port()}")}, name="gone"
    )
    started = time.monotonic()
    error = await probe_failure(provider, 2.0)
    assert error.kind == "network"
    assert time.monotonic() - started < scaled(2.0)


async def test_probe_of_an_endpoint_that_never_answers_respects_the_timeout(
    upstream: FakeUpstream, vendor: Vendor
) -> None:
    upstream.silent("GET", vendor.models_path)
    started = time.monotonic()
    error = await probe_failure(vendor.provider(upstream), 0.3)
    assert error.kind == "network"
    assert "no model list" in error.message
    assert time.monotonic() - started < scaled(2.0)


async def test_probe_401_is_an_auth_error(upstream: FakeUpstream, vendor: Vendor) -> None:
    upstream.json("GET", vendor.models_path, vendor.error_body("authentication_error", "bad key"), status=401)
    error = await probe_failure(vendor.provider(upstream), 2.0)
    assert error.kind == "auth"
    assert "bad key" in error.message


async def test_probe_of_an_answer_without_a_model_list_is_an_upstream_error(
    upstream: FakeUpstream, vendor: Vendor
) -> None:
    upstream.json("GET", vendor.models_path, {"object": "list"})
    error = await probe_failure(vendor.provider(upstream), 2.0)
    assert error.kind == "upstream"
    assert "unexpected answer" in error.message and "/models" in error.message


# --- settings and imports ------------------------------------------------------------------


def test_settings_reject_unknown_keys_and_hide_the_key(vendor: Vendor) -> None:
    from pydantic import ValidationError

    model = vendor.settings_model()
    with pytest.raises(ValidationError):
        model.model_validate({"api_kye": "x"})
    assert vendor.key not in repr(model.model_validate({"api_key": vendor.key}))


def test_importing_the_plugin_and_listing_models_is_cheap(vendor: Vendor) -> None:
    code = (
        "import asyncio, sys\n"
        f"import hermes_{vendor.name}.plugin as p\n"
        "assert 'pydantic' not in sys.modules, 'plugin.py imported pydantic'\n"
        "spec = p.hermes_model_providers()\n"
        f"provider = spec.factory({{}}, name={vendor.name!r}, preset=None)\n"
        "asyncio.run(provider.list_models())\n"
        "assert 'aiohttp' not in sys.modules, 'offline use imported aiohttp'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
