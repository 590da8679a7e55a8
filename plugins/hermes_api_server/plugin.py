"""Declare the ``hermes api`` transport; cheap to import (aiohttp loads inside the factory)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import SCHEMA_VERSION, OptionSpec, SchemaSpec, TransportSpec, hookimpl

if TYPE_CHECKING:
    from hermes_api_server.settings import ApiSettings
    from hermes_core import TransportContext


async def _factory(ctx: TransportContext[ApiSettings]) -> int:
    """Import the server and run it until a signal arrives.

    :param ctx: the transport context built by ``hermes_cli``.
    :returns: the process exit code.
    """
    from hermes_api_server.server import serve

    return await serve(ctx)


SPEC = TransportSpec(
    name="api",
    summary="Serve the OpenAI-compatible HTTP + SSE API (default http://127.0.0.1:8642/v1)",
    factory=_factory,
    options=(
        OptionSpec("host", "str", "address to bind (default 127.0.0.1)", field="host"),
        OptionSpec("port", "int", "port to bind (default 8642; 0 picks a free port)", field="port"),
        OptionSpec(
            "workspace",
            "path",
            "directory the tools of new sessions work in (default: a new folder per session)",
            field="workspace",
        ),
        OptionSpec("console", "bool", "serve the web console at /console", field="console"),
        OptionSpec("show-key", "bool", "print the effective API key and exit", default=False),
        OptionSpec(
            "check",
            "bool",
            "check storage, the run bus and the default model, print a report and exit",
            default=False,
        ),
    ),
    settings_model="hermes_api_server.settings:ApiSettings",
    config_section="api_server",
    env={
        "host": "API_SERVER_HOST",
        "port": "API_SERVER_PORT",
        "key": "API_SERVER_KEY",
        "cors_origins": "API_SERVER_CORS_ORIGINS",
        "trusted_proxies": "API_SERVER_TRUSTED_PROXIES",
        "chat_id_headers": "API_SERVER_CHAT_ID_HEADERS",
        "user_id_headers": "API_SERVER_USER_ID_HEADERS",
        "model_name": "API_SERVER_MODEL_NAME",
        "workspace": "API_SERVER_WORKSPACE",
    },
)


@hookimpl
def hermes_transports() -> TransportSpec:
    """Return the ``api`` transport."""
    return SPEC


def _schema() -> dict[str, Any]:
    from hermes_api_server.openapi_doc import build_document

    return build_document(SCHEMA_VERSION)


@hookimpl
def hermes_schemas() -> SchemaSpec:
    """Return the API server's OpenAPI document for ``hermes schema export``."""
    return SchemaSpec(
        name="api",
        summary="OpenAI-compatible HTTP API with every SSE payload (OpenAPI 3.1)",
        kind="openapi",
        build=_schema,
    )
