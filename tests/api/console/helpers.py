"""A console client over plain HTTP: a cookie jar, the CSRF token, and the console's own API."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from tests.api.api_helpers import Reply, Server, parse_sse

KEY_A = "hk_console_key_alpha_0123456789"
KEY_B = "hk_console_key_bravo_9876543210"
TWO_KEYS = f"""
[api_server]
console = true
keys = ["{KEY_A}", "{KEY_B}"]
"""


@dataclass
class Console:
    """One browser-like client of the console: its cookies and CSRF token."""

    server: Server
    client: aiohttp.ClientSession
    csrf: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    async def request(
        self, method: str, path: str, body: Any = None, *, csrf: bool | str = True, **headers: str
    ) -> Reply:
        h = dict(headers)
        if csrf is True and self.csrf:
            h["X-Hermes-CSRF"] = self.csrf
        elif isinstance(csrf, str):
            h["X-Hermes-CSRF"] = csrf
        data = None if body is None else json.dumps(body)
        async with self.client.request(method, self.server.base + path, data=data, headers=h) as resp:
            return Reply(resp.status, resp.headers, await resp.text())

    async def sign_in(self, key: str) -> Reply:
        reply = await self.request("POST", "/console/api/session", {"key": key}, csrf=False)
        if reply.status == 200:
            self.csrf = reply.json["csrf_token"]
        return reply

    async def start(self, text: str) -> str:
        reply = await self.request("POST", "/console/api/runs", {"input": text})
        assert reply.status == 202, reply.text
        return str(reply.json["run_id"])

    async def events(self, run_id: str, **headers: str) -> list[dict[str, Any]]:
        reply = await self.request("GET", f"/console/api/runs/{run_id}/events", csrf=False, **headers)
        assert reply.status == 200, reply.text
        return [f for f in parse_sse(reply.text) if "data" in f]


def open_console(server: Server) -> Console:
    """Return a console client; call inside a running loop and close ``client`` at the end."""
    jar = aiohttp.CookieJar(unsafe=True)  # the server is 127.0.0.1, an IP address
    client = aiohttp.ClientSession(cookie_jar=jar, timeout=aiohttp.ClientTimeout(total=30))
    return Console(server, client)
