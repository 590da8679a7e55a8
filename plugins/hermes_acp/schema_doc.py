"""Build ACP's document for ``hermes schema export``: the vendored schema plus Hermes' ``_meta``.

The document is the official ACP v1 schema (``acp_schema/schema.json``, see its README) with its
``$defs`` as they are, and Hermes' extensions beside them: each ``_meta`` type of
:mod:`hermes_acp.wire_meta` as a definition (all named ``Hermes…``), and ``x-meta-extensions`` naming which
ACP definition carries which. ``x-side`` (already in the schema) tells the direction of each
message: ``agent`` requests and notifications are what the agent receives, ``agent`` responses
what it sends; ``client`` the other way round.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from typing import Any

from hermes_core import JSON_SCHEMA_DIALECT, SCHEMA_VERSION, wire_schemas

VENDORED = "schema.json"
REF = "#/$defs/"


def vendored_bytes() -> bytes:
    """Return the vendored ``schema.json`` shipped with the plugin."""
    return resources.files("hermes_acp").joinpath("acp_schema", VENDORED).read_bytes()


def build() -> dict[str, Any]:
    """Return the ACP document: vendored ``$defs`` plus the ``_meta`` extensions."""
    from hermes_acp.static import PROTOCOL_VERSION
    from hermes_acp.wire_meta import META_EXTENSIONS

    raw = vendored_bytes()
    vendored: dict[str, Any] = json.loads(raw)
    defs: dict[str, Any] = dict(vendored["$defs"])
    defs.update(wire_schemas({t.__name__: t for t in META_EXTENSIONS.values()}, REF))
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": "Hermes over the Agent Client Protocol",
        "version": SCHEMA_VERSION,
        "x-acp-protocol-version": PROTOCOL_VERSION,
        "x-vendored": {
            "file": VENDORED,
            "source": "@agentclientprotocol/sdk 2.4.0",
            "sha256": hashlib.sha256(raw).hexdigest(),
        },
        "anyOf": vendored["anyOf"],
        "$defs": dict(sorted(defs.items())),
        "x-meta-extensions": {
            acp_name: {"$ref": REF + t.__name__} for acp_name, t in sorted(META_EXTENSIONS.items())
        },
    }
