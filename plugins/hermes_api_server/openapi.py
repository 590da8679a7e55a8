"""The static OpenAPI 3.1 document (§4.4)."""

from __future__ import annotations

from aiohttp import web

from hermes_api_server.errors import json_response


async def document(request: web.Request) -> web.Response:
    """Serve ``/openapi.json`` (auth-free, static)."""
    from hermes_api_server.openapi_doc import build_document
    from hermes_api_server.state import get_state

    response = json_response(build_document(get_state(request).version))
    response.headers["Cache-Control"] = "public, max-age=300"
    return response
