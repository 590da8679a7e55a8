"""Console sign-in throttling over plain HTTP (docs/console.md#security-model): too many wrong keys
from one client address within a window get 429 with Retry-After, for any key, until the window
lets them go; other addresses are not affected."""

from __future__ import annotations

from collections.abc import Callable

import aiohttp

from tests.api.api_helpers import Server, assert_error
from tests.api.console.helpers import KEY_A, TWO_KEYS, Console
from tests.timing import eventually

MakeServer = Callable[..., Server]
WRONG = "hk_not_a_key_of_this_server_000000"


def console_from(server: Server, address: str) -> Console:
    """A console client whose connections come from ``address`` (any 127.x.y.z is loopback)."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0))
    client = aiohttp.ClientSession(
        connector=connector,
        cookie_jar=aiohttp.CookieJar(unsafe=True),
        timeout=aiohttp.ClientTimeout(total=30),
    )
    return Console(server, client)


async def test_wrong_keys_from_one_address_are_throttled_with_retry_after(make_server: MakeServer) -> None:
    srv = make_server(TWO_KEYS + "console_signin_max_failures = 3\n")
    mallory, alice = console_from(srv, "127.0.0.1"), console_from(srv, "127.0.0.2")
    try:
        for _ in range(3):
            assert_error(await mallory.sign_in(WRONG), 401, "invalid_api_key")
        refused = await mallory.sign_in(WRONG)
        err = assert_error(refused, 429, "rate_limit_exceeded")
        wait = int(refused.headers["Retry-After"])
        assert 1 <= wait <= 60 and f"try again in {wait} s" in err["message"]
        # While throttled even the right key is refused, and nothing was granted.
        assert_error(await mallory.sign_in(KEY_A), 429, "rate_limit_exceeded")
        assert_error(await mallory.request("GET", "/console/api/runs", csrf=False), 401, "console_signed_out")
        # Another address signs in as usual.
        assert (await alice.sign_in(KEY_A)).status == 200
        assert (await alice.request("GET", "/console/api/runs", csrf=False)).status == 200
        # A malformed body is not a wrong key and is answered as before.
        empty = await alice.request("POST", "/console/api/session", {"key": ""}, csrf=False)
        assert_error(empty, 400, "invalid_value")
    finally:
        await mallory.client.close()
        await alice.client.close()


async def test_the_window_lets_an_address_try_again_and_a_sign_in_clears_its_count(
    make_server: MakeServer,
) -> None:
    srv = make_server(TWO_KEYS + "console_signin_max_failures = 2\nconsole_signin_window_s = 2\n")
    user = console_from(srv, "127.0.0.3")
    try:
        assert_error(await user.sign_in(WRONG), 401, "invalid_api_key")
        assert_error(await user.sign_in(WRONG), 401, "invalid_api_key")
        refused = await user.sign_in(KEY_A)
        assert_error(refused, 429, "rate_limit_exceeded")
        wait = int(refused.headers["Retry-After"])
        assert 1 <= wait <= 2

        async def signed_in() -> bool:
            return (await user.sign_in(KEY_A)).status == 200

        await eventually(signed_in, timeout=10, interval=0.2, what="sign-in after the window")
        # Signing in forgot the earlier failures: one wrong key is again just a 401.
        assert_error(await user.sign_in(WRONG), 401, "invalid_api_key")
        assert (await user.sign_in(KEY_A)).status == 200
    finally:
        await user.client.close()
