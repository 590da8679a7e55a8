"""Declare the ``tui`` transport: ``hermes tui`` (stdio) and ``hermes tui --ws HOST:PORT``.

Cheap to import: the gateway, pydantic and aiohttp load inside the factory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import OptionSpec, SchemaSpec, TransportSpec, hookimpl

if TYPE_CHECKING:
    from hermes_core import TransportContext
    from hermes_tui_gateway.settings import TuiSettings


async def _factory(ctx: TransportContext[TuiSettings]) -> int:
    """Run the gateway until its input ends; return the exit code.

    :param ctx: what the CLI hands every transport.
    :returns: the process exit code.
    """
    from hermes_tui_gateway.serve import serve

    return await serve(ctx)


OPTIONS = (
    OptionSpec("ws", "str", "serve WebSocket JSON-RPC on HOST:PORT at /api/ws instead of stdio"),
    OptionSpec("allow-remote", "bool", "allow a non-loopback --ws host", field="allow_remote"),
    OptionSpec(
        "allow-origin",
        "str",
        "an extra allowed Origin for --ws (repeatable)",
        multiple=True,
        field="allow_origin",
    ),
    OptionSpec("token-file", "path", "read the WebSocket token from this file", field="token_file"),
    OptionSpec(
        "orphan-grace", "float", "seconds before a detached idle session is closed", field="orphan_grace_s"
    ),
)

SPEC = TransportSpec(
    name="tui",
    summary="TUI-gateway JSON-RPC for host programs (stdio, or WebSocket with --ws)",
    factory=_factory,
    options=OPTIONS,
    settings_model="hermes_tui_gateway.settings:TuiSettings",
    config_section="tui",
    env={"token": "HERMES_TUI_TOKEN"},
)


@hookimpl
def hermes_transports() -> TransportSpec:
    """Return the ``tui`` transport."""
    return SPEC


def _schema() -> dict[str, Any]:
    from hermes_tui_gateway.schema_doc import build

    return build()


@hookimpl
def hermes_schemas() -> SchemaSpec:
    """Return the TUI gateway's OpenRPC document for ``hermes schema export``."""
    return SchemaSpec(
        name="tui",
        summary="TUI gateway: JSON-RPC methods, events and error codes (OpenRPC)",
        kind="openrpc",
        build=_schema,
    )
