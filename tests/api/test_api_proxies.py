"""Behind a trusted reverse proxy (docs/reference/api-server.md#behind-a-reverse-proxy): the client's
address and scheme come from X-Forwarded-For / X-Forwarded-Proto, but only on connections from an
address in ``trusted_proxies``; from anywhere else the headers change nothing."""

from __future__ import annotations

import subprocess
from http.cookies import SimpleCookie
from pathlib import Path

import aiohttp

from tests.api.api_helpers import HERMES, Server, clean_env, start_server, write_config
from tests.api.console.helpers import KEY_A
from tests.timing import scaled

# The tests' own "proxy" connects from 127.0.0.2 (any 127/8 address is this machine's loopback);
# plain clients connect from 127.0.0.1, which is not trusted.
CONFIG = f"""
[api_server]
console = true
keys = ["{KEY_A}"]
trusted_proxies = ["127.0.0.2/32"]
console_signin_max_failures = 2
"""


async def sign_in(server: Server, key: str, source: str, **headers: str) -> tuple[int, str]:
    connector = aiohttp.TCPConnector(local_addr=(source, 0))
    async with aiohttp.ClientSession(connector=connector) as client:
        async with client.post(
            f"{server.base}/console/api/session", json={"key": key}, headers=headers
        ) as resp:
            return resp.status, resp.headers.get("Set-Cookie", "")


def secure(set_cookie: str) -> bool:
    cookie = SimpleCookie()
    cookie.load(set_cookie)
    return bool(cookie["hermes_console"]["secure"])


async def test_a_trusted_proxy_names_the_client_and_the_scheme(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", config=CONFIG)
    try:
        # TLS ended at the proxy: the cookie is still marked Secure.
        status, cookie = await sign_in(server, KEY_A, "127.0.0.2", **{"X-Forwarded-Proto": "https"})
        assert status == 200 and secure(cookie)
        # Wrong keys are counted per client behind the proxy, not for the proxy as a whole.
        one = {"X-Forwarded-For": "203.0.113.7"}
        assert [
            (await sign_in(server, "hk_wrong_wrong_wrong_0000", "127.0.0.2", **one))[0] for _ in range(3)
        ] == [
            401,
            401,
            429,
        ]
        other = {"X-Forwarded-For": "203.0.113.8"}
        assert (await sign_in(server, KEY_A, "127.0.0.2", **other))[0] == 200
        # A client cannot pick its address by sending the header itself: the proxy appends the
        # real one, and the right-most untrusted entry is the one believed.
        spoofed = {"X-Forwarded-For": "203.0.113.8, 203.0.113.7"}
        assert (await sign_in(server, KEY_A, "127.0.0.2", **spoofed))[0] == 429
    finally:
        server.stop()


async def test_the_headers_are_ignored_from_an_untrusted_address(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", config=CONFIG)
    try:
        forged = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.1"}
        status, cookie = await sign_in(server, KEY_A, "127.0.0.1", **forged)
        assert status == 200 and not secure(cookie)
        # Throttled as 127.0.0.1 whatever address the header claims.
        for n in range(2):
            forged = {"X-Forwarded-For": f"198.51.100.{10 + n}"}
            assert (await sign_in(server, "hk_wrong_wrong_wrong_0000", "127.0.0.1", **forged))[0] == 401
        assert (await sign_in(server, KEY_A, "127.0.0.1", **{"X-Forwarded-For": "198.51.100.99"}))[0] == 429
    finally:
        server.stop()


def test_a_setting_that_is_no_address_stops_start_up(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home, '[api_server]\ntrusted_proxies = ["10.0.0.0/8", "proxy.internal"]\n')
    done = subprocess.run(
        [HERMES, "api", "--port", "0"],
        env=clean_env(home),
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "trusted_proxies" in errors[0] and "proxy.internal" in errors[0], done.stderr
