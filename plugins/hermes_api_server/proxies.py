"""Requests that reach the server through a trusted reverse proxy
(docs/reference/api-server.md#behind-a-reverse-proxy).

A proxy's own address says nothing about the client. When the connection comes from an address in
``api_server.trusted_proxies``, the client's address is read from ``X-Forwarded-For`` (the
right-most entry that is not itself a trusted proxy, so a client cannot choose it by sending the
header itself) and the scheme from ``X-Forwarded-Proto``. From anywhere else both headers are
ignored.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Sequence

from aiohttp import web

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(values: Sequence[str]) -> tuple[Network, ...]:
    """Read ``trusted_proxies`` entries (an address or a CIDR block each).

    :raises ValueError: an entry that is neither.
    """
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            raise ValueError(f"trusted_proxies: {value!r} is not an IP address or CIDR block") from None
    return tuple(networks)


@functools.lru_cache(maxsize=8)
def networks_of(values: tuple[str, ...]) -> tuple[Network, ...]:
    """The parsed ``trusted_proxies`` setting (validated at start-up, so it parses)."""
    return parse_networks(values)


def _trusted(address: str | None, networks: tuple[Network, ...]) -> bool:
    if not address:
        return False
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def _client(forwarded_for: str, networks: tuple[Network, ...]) -> str | None:
    """Return the right-most address of an ``X-Forwarded-For`` chain that is not a trusted proxy."""
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            return None  # a chain we cannot read: keep the proxy's address
        if not _trusted(hop, networks):
            return hop
    return hops[0] if hops else None


def unwrap(request: web.Request, networks: tuple[Network, ...]) -> web.Request:
    """Return ``request`` as the client sent it to the proxy, when the proxy is trusted."""
    if not networks or not _trusted(request.remote, networks):
        return request
    changes: dict[str, str] = {}
    forwarded_for = request.headers.get("X-Forwarded-For")
    if forwarded_for:
        client = _client(forwarded_for, networks)
        if client is not None:
            changes["remote"] = client
    proto = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    if proto in ("http", "https"):
        changes["scheme"] = proto
    return request.clone(**changes) if changes else request  # type: ignore[arg-type]
