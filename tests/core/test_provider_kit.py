"""``hermes_core.provider_kit``: the pieces the HTTP provider plugins share, tested on their own.

The providers' end-to-end behaviour (real HTTP against a fake upstream) is in
``tests/providers``; here each helper is driven directly, including the cases a fake server
cannot easily produce (bytes split mid-line, dates in the past, odd error bodies).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from email.utils import formatdate
from typing import Any

import pytest

from hermes_core import ProviderError, provider_kit
from tests.timing import scaled

# --- streams ---------------------------------------------------------------------------------


class Body:
    """A response body that hands out the given pieces, then ends or (``stall=True``) hangs."""

    def __init__(self, pieces: Iterable[bytes], *, stall: bool = False) -> None:
        self._pieces = list(pieces)
        self._stall = stall

    async def readany(self) -> bytes:
        if self._pieces:
            return self._pieces.pop(0)
        if self._stall:
            await asyncio.Event().wait()
        return b""


async def events(*pieces: bytes) -> list[tuple[str, str]]:
    return [(e.event, e.data) async for e in provider_kit.iter_events(Body(pieces), 1.0)]


async def test_events_are_reassembled_from_pieces_cut_anywhere() -> None:
    stream = b'event: delta\r\ndata: {"a": 1}\r\n\r\n: keep-alive\n\ndata:first\ndata: second\n\n'
    expected = [("delta", '{"a": 1}'), ("message", "first\nsecond")]
    assert await events(stream) == expected
    assert await events(*(stream[i : i + 1] for i in range(len(stream)))) == expected


async def test_text_cut_inside_a_character_or_a_line_end_decodes_whole() -> None:
    # A read ends anywhere: in a two- or three-byte character, between \r and \n, in a line.
    stream = "data: caf\u00e9 \u20ac\r\ndata:\u00e9\r\n\r\nevent: x\ndata: \u20ac\n\ndata: end\r".encode()
    stream += b"\xff\n\n"  # a byte that is no UTF-8 becomes U+FFFD, as line by line
    expected = [("message", "caf\u00e9 \u20ac\n\u00e9"), ("x", "\u20ac"), ("message", "end\r\ufffd")]
    assert await events(stream) == expected
    for size in (1, 2, 3, 5):
        assert await events(*(stream[i : i + size] for i in range(0, len(stream), size))) == expected


async def test_the_last_event_is_dispatched_at_eof_without_a_blank_line() -> None:
    assert await events(b"data: one\n\ndata: two") == [("message", "one"), ("message", "two")]


async def test_a_very_long_line_is_read_whole() -> None:
    payload = "x" * 1_000_000
    assert await events(f"data: {payload}\n\n".encode()) == [("message", payload)]


async def test_an_event_without_data_is_not_dispatched() -> None:
    assert await events(b"event: ping\n\nid: 7\n\n") == []


async def test_a_silent_body_raises_stream_stalled_after_the_stall_timeout() -> None:
    started = time.monotonic()
    with pytest.raises(provider_kit.StreamStalled):
        async for _ in provider_kit.iter_events(Body([b"data: x\n\n"], stall=True), 0.1):
            pass
    assert time.monotonic() - started < scaled(1.0)


async def test_read_body_stops_at_the_limit() -> None:
    assert await provider_kit.read_body(Body([b"abc", b"def", b"ghi"]), 1.0, limit=4) == b"abcd"
    assert await provider_kit.read_body(Body([b"abc", b"def"]), 1.0) == b"abcdef"


def test_decode_event_turns_bad_data_into_stream_broken() -> None:
    assert provider_kit.decode_event('{"n": 2}', lambda p: [p["n"]]) == [2]
    with pytest.raises(provider_kit.StreamBroken, match=re.escape("malformed stream event: '{oops'")):
        provider_kit.decode_event("{oops", lambda p: [p])

    def reject(payload: Any) -> list[Any]:
        raise ValueError("not an object")

    with pytest.raises(provider_kit.StreamBroken, match=r"malformed stream event \(not an object\)"):
        provider_kit.decode_event("[1]", reject)


# --- messages --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:pw@api.example.com:8443/v1?key=abc#frag", "https://api.example.com:8443/v1"),
        ("http://[::1]:8080/v1", "http://[::1]:8080/v1"),
        ("http://localhost/v1", "http://localhost/v1"),
        ("http://[::1/v1", "<invalid url>"),
    ],
)
def test_display_url_keeps_only_scheme_host_port_and_path(url: str, shown: str) -> None:
    assert provider_kit.display_url(url) == shown


def test_url_secrets_are_the_user_and_password() -> None:
    assert provider_kit.url_secrets("http://alice:s3cret@h/v1") == ("alice", "s3cret")
    assert provider_kit.url_secrets("http://h/v1") == (None, None)
    assert provider_kit.url_secrets("http://[::1/v1") == ()


def test_the_redactor_removes_the_longest_secret_first_and_skips_short_ones() -> None:
    redact = provider_kit.Redactor("abcd", "abcdefgh", None, "xyz")
    assert redact("key abcdefgh and abcd, not xyz") == "key *** and ***, not xyz"


def test_retry_after_in_seconds_or_milliseconds() -> None:
    assert provider_kit.parse_retry_after({"retry-after": " 7 "}) == 7.0
    assert provider_kit.parse_retry_after({"retry-after": "7", "retry-after-ms": "1500"}) == 1.5
    assert provider_kit.parse_retry_after({"retry-after": "-3"}) == 0.0
    assert provider_kit.parse_retry_after({}) is None
    assert provider_kit.parse_retry_after({"retry-after": "soon"}) is None


def test_retry_after_as_an_http_date() -> None:
    now = 1_700_000_000.0
    in_30_s = formatdate(now + 30, usegmt=True)
    assert provider_kit.parse_retry_after({"retry-after": in_30_s}, now=now) == 30.0
    past = formatdate(now - 30, usegmt=True)
    assert provider_kit.parse_retry_after({"retry-after": past}, now=now) == 0.0
    naive = "Tue, 14 Nov 2023 22:13:50 -0000"  # "-0000" means the zone is unknown
    assert provider_kit.parse_retry_after({"retry-after": naive}, now=now) is None


@pytest.mark.parametrize(
    ("body", "detail", "code"),
    [
        (b'{"error": {"message": "Bad key", "code": "invalid_api_key"}}', "Bad key", "invalid_api_key"),
        (
            b'{"type": "error", "error": {"type": "overloaded_error", "message": "Busy"}}',
            "Busy",
            "overloaded_error",
        ),
        (b'{"detail": "Not Found"}', "Not Found", None),
        (b'{"error": "quota gone", "code": 42}', "quota gone", 42),
        (
            b"<html>\n  <body>502   Bad Gateway</body>\n</html>",
            "<html> <body>502 Bad Gateway</body> </html>",
            None,
        ),
        (b'{"unexpected": true}', '{"unexpected": true}', None),
    ],
)
def test_error_detail_reads_the_common_body_shapes(body: bytes, detail: str, code: Any) -> None:
    assert provider_kit.error_detail(body) == (detail, code)


def test_error_detail_shortens_a_long_message() -> None:
    detail, _ = provider_kit.error_detail(b"x" * 2000)
    assert len(detail) == 500 and detail.endswith("…")


# --- classification --------------------------------------------------------------------------


def status_fault(payload: Any, code: Any) -> provider_kit.StreamFault:
    """A vendor hook for the tests: an integer code is the status; 429 is a rate limit."""
    if code == 429:
        return provider_kit.StreamFault("rate_limit", retryable=True, status=429)
    return provider_kit.StreamFault("upstream", retryable=False, tag=f"{code}")


def factory(*, has_key: bool = True, key_hint: str | None = "DEMO_API_KEY") -> provider_kit.ErrorFactory:
    return provider_kit.ErrorFactory(
        "demo",
        "https://bob:pw1234@api.example.com/v1?sig=zz",
        provider_kit.Redactor("sk-demo-secret", *provider_kit.url_secrets("https://bob:pw1234@h")),
        key_hint,
        has_key,
        stream_fault=status_fault,
        quota_codes=("quota_gone",),
    )


def from_status(status: int, body: bytes, **options: Any) -> ProviderError:
    headers = options.pop("headers", {})
    return factory(**options).from_status(status, "Reason", body, headers)


def test_messages_are_labelled_and_never_show_the_key() -> None:
    error = from_status(401, b'{"error": {"message": "key sk-demo-secret is wrong"}}')
    assert error.message == "demo: authentication failed (HTTP 401 Reason): key *** is wrong"
    assert factory().url == "https://api.example.com/v1"


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [(401, "auth", False), (403, "auth", False), (429, "rate_limit", True), (500, "upstream", True),
     (529, "upstream", True), (400, "upstream", False), (404, "upstream", False)],
)  # fmt: skip
def test_statuses_map_to_kinds(status: int, kind: str, retryable: bool) -> None:
    error = from_status(status, b'{"error": {"message": "no"}}', headers={"retry-after": "3"})
    assert (error.kind, error.retryable, error.status) == (kind, retryable, status)
    assert error.retry_after == (3.0 if status in (429, 500, 529) else None)


def test_a_missing_key_is_named_on_auth_failures() -> None:
    assert "(no API key is configured; set DEMO_API_KEY)" in from_status(401, b"", has_key=False).message
    assert "no API key" not in from_status(401, b"", has_key=True).message
    assert "no API key" not in from_status(401, b"", has_key=False, key_hint=None).message


def test_an_exhausted_quota_is_not_retried_and_an_odd_code_does_not_break_the_hook() -> None:
    assert from_status(429, b'{"error": {"message": "no", "code": "quota_gone"}}').retryable is False
    odd = from_status(429, b'{"error": {"message": "no", "code": {"nested": 1}}}')
    assert (odd.kind, odd.retryable) == ("rate_limit", True)


def test_in_stream_errors_follow_the_vendor_hook() -> None:
    limited = factory().from_stream_error({"error": {"message": "slow", "code": 429}})
    assert (limited.kind, limited.retryable, limited.status) == ("rate_limit", True, 429)
    assert limited.message == "demo: rate limited mid-stream: slow"
    other = factory().from_stream_error({"error": {"message": "odd", "code": "weird"}})
    assert (other.kind, other.retryable) == ("upstream", False)
    assert other.message == "demo: upstream error mid-stream (weird): odd"


# --- HTTP plumbing ---------------------------------------------------------------------------


def test_the_client_library_is_loaded_only_when_needed() -> None:
    import aiohttp

    loads: list[int] = []

    def load() -> Any:
        loads.append(1)
        return aiohttp

    http = provider_kit.HttpClient(load, factory(), connect_timeout=2.0, stall_timeout=3.0)
    assert loads == []
    assert http.network_error(provider_kit.StreamStalled()).message == (
        "demo: the stream stalled (no data for 3 s)"
    )
    broken = http.network_error(provider_kit.StreamBroken("the stream ended early"))
    assert (broken.kind, broken.retryable, broken.message) == (
        "network",
        False,
        "demo: the stream ended early",
    )
    assert "invalid base_url" in http.network_error(aiohttp.InvalidURL("::")).message
    assert (
        http.network_error(TimeoutError()).message
        == "demo: no answer from https://api.example.com/v1 in time"
    )
    assert loads


# --- settings --------------------------------------------------------------------------------


def test_blank_settings_are_unset_and_urls_lose_their_trailing_slash() -> None:
    settings = provider_kit.HttpSettings.model_validate(
        {"api_key": "  ", "base_url": " http://h/v1/ ", "proxy": ""}
    )
    assert (settings.api_key, settings.base_url, settings.proxy) == (None, "http://h/v1", None)
    key = provider_kit.HttpSettings.model_validate({"api_key": " k3y "}).api_key
    assert key is not None and key.get_secret_value() == "k3y"


def test_settings_reject_unknown_keys_and_bad_timeouts() -> None:
    from pydantic import ValidationError

    for bad in ({"api_kye": "x"}, {"timeout_s": 0}, {"models": [{"id": ""}]}):
        with pytest.raises(ValidationError):
            provider_kit.HttpSettings.model_validate(bad)


def test_coerce_settings_accepts_an_instance_a_mapping_none_or_another_model() -> None:
    model = provider_kit.HttpSettings
    given = model(timeout_s=3.0)
    assert provider_kit.coerce_settings(model, given) is given
    assert provider_kit.coerce_settings(model, None) == model()
    assert provider_kit.coerce_settings(model, {"timeout_s": 4}).timeout_s == 4.0
    assert provider_kit.coerce_settings(model, given.model_copy()) == given


def test_importing_the_kit_loads_neither_pydantic_nor_aiohttp() -> None:
    code = (
        "import sys\n"
        "from hermes_core import provider_kit\n"
        "provider_kit.iter_events, provider_kit.ErrorFactory, provider_kit.HttpClient\n"
        "print(sorted(m for m in ('pydantic', 'aiohttp') if m in sys.modules))\n"
        "provider_kit.HttpSettings\n"
        "print('pydantic' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split("\n")[:2] == ["[]", "True"]
