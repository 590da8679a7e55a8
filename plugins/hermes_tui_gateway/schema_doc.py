"""Build the TUI gateway's OpenRPC document for ``hermes schema export`` (docs/integrating.md).

Methods come from the gateway's own method tables (every module's ``register``), events and
error codes from :mod:`hermes_tui_gateway.wire`, payload schemas from the same ``TypedDict`` s the
encoders build. Events are server-to-client notifications, which OpenRPC has no place for: they
are listed under ``x-events`` (name → payload schema) and carried by the ``event`` notification.
Typed methods (:data:`hermes_tui_gateway.wire_methods.METHOD_TYPES`) list each field of their
params model as a by-name param (an optional one also accepts ``null``: the TUI reads ``null``
as absent) and their result type as the result. A method or event whose payload is not typed
yet says so with ``x-typed: false``; its schema is any object.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hermes_core import JSON_SCHEMA_DIALECT, SCHEMA_VERSION, wire_schemas

REF = "#/components/schemas/"
ANY_OBJECT: dict[str, Any] = {"type": "object"}


def method_names() -> list[str]:
    """Return every method the gateway answers, sorted, by registering them on a stand-in."""
    from hermes_tui_gateway.method_index import method_modules

    tables = SimpleNamespace(fast={}, ordered={}, slow={})
    for module in method_modules():
        module.register(tables)
    return sorted({*tables.fast, *tables.ordered, *tables.slow})


def _method(name: str) -> dict[str, Any]:
    from hermes_tui_gateway.feature_off import ANSWERS

    out: dict[str, Any] = {
        "name": name,
        "paramStructure": "by-name",
        "params": [],
        "result": {"name": "result", "schema": ANY_OBJECT},
        "x-typed": False,
    }
    if name in ANSWERS:
        out["summary"] = "Answered as off: a feature of upstream's Ink TUI that Hermes does not have."
    return out


def _typed_method(name: str, params_model: Any, result: Any, schemas: dict[str, Any]) -> dict[str, Any]:
    """Return one typed method; its params model's schema is split into by-name params."""
    model_schema = schemas[params_model.__name__]
    required = {*model_schema.get("required", ()), *params_model.REQUIRED}
    params = []
    for field, schema in model_schema.get("properties", {}).items():
        schema = {k: v for k, v in schema.items() if k != "title"}
        entry: dict[str, Any] = {"name": field, "required": field in required}
        if not entry["required"]:
            default = schema.pop("default", None)
            variants = schema.get("anyOf")
            if isinstance(variants, list) and set(schema) == {"anyOf"}:
                if {"type": "null"} not in variants:
                    schema = {"anyOf": [*variants, {"type": "null"}]}
            elif schema.get("type") != "null":
                schema = {"anyOf": [schema, {"type": "null"}]}
            if default is not None:
                schema["default"] = default
        entry["schema"] = schema
        description = schema.get("description")
        if description:
            entry["description"] = description
        params.append(entry)
    out: dict[str, Any] = {"name": name, "paramStructure": "by-name", "params": params}
    if model_schema.get("description"):
        out["summary"] = model_schema["description"].split("\n\n")[0].replace("\n", " ")
    out["result"] = {"name": result.__name__, "schema": {"$ref": REF + result.__name__}}
    return out


def build() -> dict[str, Any]:
    """Return the OpenRPC 1.3 document of the TUI gateway."""
    from hermes_tui_gateway import wire
    from hermes_tui_gateway.wire_methods import METHOD_TYPES

    typed = {name: t for name, t in wire.EVENTS.items() if t is not None}
    payload_types = {t.__name__: t for t in typed.values()}
    results = {r.__name__: r for _p, r in METHOD_TYPES.values()}
    schemas = wire_schemas({**payload_types, **results, "EventParams": wire.EventParams}, REF)
    params_models = {m.__name__: m for m, _r in METHOD_TYPES.values()}
    inputs = wire_schemas(params_models, REF, mode="validation")
    methods = []
    for name in method_names():
        if name in METHOD_TYPES:
            methods.append(_typed_method(name, *METHOD_TYPES[name], inputs))
        else:
            methods.append(_method(name))
    # The params models are spread into each method's params; what they refer to stays.
    for key, schema in inputs.items():
        if key not in params_models:
            if key in schemas and schemas[key] != schema:
                raise ValueError(f"two wire types are both named {key!r}")
            schemas[key] = schema
    schemas = dict(sorted(schemas.items()))
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
        "methods": methods,
        "components": {"schemas": schemas},
        "x-json-schema-dialect": JSON_SCHEMA_DIALECT,
        "x-notification": {"method": "event", "params": {"$ref": REF + "EventParams"}},
        "x-events": events,
        "x-error-codes": errors,
    }
