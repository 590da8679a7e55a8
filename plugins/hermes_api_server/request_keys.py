"""Typed keys for what the API server stores on a request.

aiohttp 3.14 added ``web.RequestKey`` and warns on every plain string key; older releases
(``aiohttp>=3.9`` is supported) take a string. One place decides which, so the handlers
stay the same on both.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web


def request_key(name: str, kind: type[Any]) -> Any:
    """A key for ``request[...]``: ``web.RequestKey`` where aiohttp has it, else ``name``."""
    factory = getattr(web, "RequestKey", None)
    return name if factory is None else factory(name, kind)
