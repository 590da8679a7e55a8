"""Build the TUI gateway's OpenRPC document for ``hermes schema export`` (docs/integrating.md).

Methods come from the gateway's own method tables (every module's ``register``), events and
error codes from :mod:`hermes_tui_gateway.wire`, payload schemas from the same ``TypedDict`` s the
encoders build. Events are server-to-client notifications, which OpenRPC has no place for: they
are listed under ``x-events`` (name → payload schema) and carried by the ``event`` notification.
A method or event whose payload is not typed yet says so with ``x-typed: false``; its schema is
any object.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hermes_core import JSON_SCHEMA_DIALECT, SCHEMA_VERSION, wire_schemas

REF = "#/components/schemas/"
ANY_OBJECT: dict[str, Any] = {"type": "object"}


def method_names() -> list[str]:
    """Return every method the gateway answers, sorted, by registering them on a stand-in."""
    from hermes_tui_gateway.gateway import method_modules

    tables = SimpleNamespace(fast={}, ordered={}, slow={})
    for module in method_modules():
        module.register(tables)
    return sorted({*tables.fast, *tables.ordered, *tables.slow})


def _method(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "paramStructure": "by-name",
        "params": [],
        "result": {"name": "result", "schema": ANY_OBJECT},
        "x-typed": False,
    }


def build() -> dict[str, Any]:
    """Return the OpenRPC 1.3 document of the TUI gateway."""
    from hermes_tui_gateway import wire

    typed = {name: t for name, t in wire.EVENTS.items() if t is not None}
    payload_types = {t.__name__: t for t in typed.values()}
    schemas = wire_schemas({**payload_types, "EventParams": wire.EventParams}, REF)
    events: dict[str, Any] = {}
    for name, type_ in sorted(wire.EVENTS.items()):
        if type_ is None:
            events[name] = {"schema": ANY_OBJECT, "x-typed": False}
        else:
            events[name] = {"schema": {"$ref": REF + type_.__name__}}
    errors = [{"code": code, "message": text} for code, text in sorted(wire.ERROR_CODES.items())]
    return {
        "openrpc": "1.3.2",
        "info": {
            "title": "Hermes TUI gateway",
            "version": SCHEMA_VERSION,
            "description": "JSON-RPC 2.0 over NDJSON stdio or WebSocket (docs/reference/tui-gateway.md).",
        },
        "methods": [_method(name) for name in method_names()],
        "components": {"schemas": schemas},
        "x-json-schema-dialect": JSON_SCHEMA_DIALECT,
        "x-notification": {"method": "event", "params": {"$ref": REF + "EventParams"}},
        "x-events": events,
        "x-error-codes": errors,
    }
