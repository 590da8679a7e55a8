"""Declare the ``hermes acp`` transport (Agent Client Protocol on stdio) through ``hermes_transports``.

Cheap to import: the factory imports the server module only when the command runs, so listing
transports or building the CLI never pays for the ACP code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import OptionSpec, SchemaSpec, TransportSpec, hookimpl

if TYPE_CHECKING:
    from hermes_acp.settings import AcpSettings
    from hermes_core import TransportContext


async def _factory(ctx: TransportContext[AcpSettings]) -> int:
    """Run ``hermes acp`` in the mode its flags select.

    :param ctx: the transport context from ``hermes_cli``.
    :returns: the process exit code.
    """
    from hermes_acp.entry import run

    return await run(ctx)


SPEC = TransportSpec(
    name="acp",
    summary="Serve the Agent Client Protocol on stdio (Zed, JetBrains, VS Code)",
    factory=_factory,
    options=(
        OptionSpec(
            "check",
            "bool",
            "Run a self-check and print a report; never reads stdin",
            group="mode",
            core={"storage.read_only": True},  # the check writes nothing (docs/reference/acp.md#self-check)
        ),
        OptionSpec("setup", "bool", "Set up a provider, model and API key in a terminal", group="mode"),
    ),
    settings_model="hermes_acp.settings:AcpSettings",
    config_section="acp",
    # No echo fallback: without a model, sessions ask the editor to authenticate (docs/protocols/acp.md).
    core={"model_fallback": False},
    env={
        "default_mode": "HERMES_ACP_DEFAULT_MODE",
        "list_page_size": "HERMES_ACP_LIST_PAGE_SIZE",
        "fs_timeout_s": "HERMES_ACP_FS_TIMEOUT_S",
    },
)


@hookimpl
def hermes_transports() -> TransportSpec:
    """Return the ACP transport.

    :returns: the ``acp`` transport spec.
    """
    return SPEC


def _schema() -> dict[str, Any]:
    from hermes_acp.schema_doc import build

    return build()


@hookimpl
def hermes_schemas() -> SchemaSpec:
    """Return ACP's document (the vendored schema and Hermes' ``_meta``) for ``hermes schema export``."""
    return SchemaSpec(
        name="acp",
        summary="Agent Client Protocol v1 with Hermes' _meta extensions (JSON Schema)",
        kind="jsonschema",
        build=_schema,
    )
