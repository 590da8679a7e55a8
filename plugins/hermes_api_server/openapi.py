"""The static OpenAPI 3.1 document (docs/reference/api-server.md#get-openapijson)."""

from __future__ import annotations

import asyncio

from aiohttp import web

from hermes_api_server.errors import JSON_TYPE, dumps

# The document never changes within a process; its first build (pydantic schema generation,
# a few hundred ms) runs in a worker thread so that it does not stall streams on the loop.
_rendered: dict[str, str] = {}


def _render(version: str) -> str:
    from hermes_api_server.openapi_doc import build_document

    return dumps(build_document(version))


async def document(request: web.Request) -> web.Response:
    """Serve ``/openapi.json`` (auth-free, static)."""
    from hermes_api_server.state import get_state

    version = get_state(request).version
    text = _rendered.get(version)
    if text is None:
        text = _rendered[version] = await asyncio.to_thread(_render, version)
    return web.Response(
        text=text,
        content_type=JSON_TYPE,
        charset="utf-8",
        headers={"Cache-Control": "public, max-age=300"},
    )
