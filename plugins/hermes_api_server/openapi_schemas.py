"""The ``components.schemas`` of the OpenAPI document (docs/reference/api-server.md#get-openapijson)
and which schema each stream event of a streaming operation has.

Request and response bodies come from the pydantic models in ``request_models``,
``response_models``, ``response_models_items`` and ``response_models_runs``; the stream payloads
from the ``TypedDict`` s the encoders build frames with (``chunk_models``, ``response_events``,
``run_event_models``). Both are converted with pydantic's JSON Schema generator when the
document is first built.
"""

from __future__ import annotations

import functools
from typing import Any

from hermes_api_server.response_events import RESPONSE_EVENT_TYPES
from hermes_api_server.run_event_models import RUN_EVENT_FIELDS
from hermes_api_server.run_event_models import schema_name as run_event_name
from hermes_core import wire_schemas

OBJECT = {"type": "object", "additionalProperties": True}
RUN_EVENTS = tuple(RUN_EVENT_FIELDS)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


SSE_EVENTS: dict[str, dict[str, dict[str, str]]] = {
    "createChatCompletion": {
        "chat.completion.chunk": _ref("ChatCompletionChunk"),
        "hermes.tool.progress": _ref("ToolProgressChunk"),
    },
    "createResponse": {name: _ref(type_.__name__) for name, type_ in RESPONSE_EVENT_TYPES.items()},
    "retrieveResponse": {name: _ref(type_.__name__) for name, type_ in RESPONSE_EVENT_TYPES.items()},
    "streamRunEvents": {
        **{name: _ref(run_event_name(name)) for name in RUN_EVENTS},
        "stream.gap": _ref("StreamGap"),
    },
}


def _body_refs(schema: Any) -> Any:
    """Return ``schema`` with each :data:`~hermes_api_server.chunk_models.BODY_REF` marker made a
    ``$ref`` to the body model it names."""
    from hermes_api_server.chunk_models import BODY_REF

    if isinstance(schema, dict):
        if BODY_REF in schema:
            return {"$ref": f"#/components/schemas/{schema[BODY_REF]}"}
        return {key: _body_refs(value) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_body_refs(item) for item in schema]
    return schema


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """Return ``schema`` with every components ``$ref`` replaced by its target (no cycles here)."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            return _inline(defs[ref.rsplit("/", 1)[1]], defs)
        return {key: _inline(value, defs) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_inline(item, defs) for item in schema]
    return schema


@functools.cache
def component_schemas() -> dict[str, Any]:
    """Return ``components.schemas``: the request and response models' JSON Schemas.

    Built once per process from the pydantic models, so the document stays the same everywhere.
    """
    from pydantic.json_schema import models_json_schema

    from hermes_api_server.chunk_models import CHUNK_TYPES
    from hermes_api_server.request_models import REQUEST_MODELS
    from hermes_api_server.response_models import RESPONSE_MODELS, OutputItem
    from hermes_api_server.response_models_items import ITEM_MODELS
    from hermes_api_server.response_models_runs import RUN_MODELS
    from hermes_api_server.run_event_models import run_event_schemas

    models = [*REQUEST_MODELS.values(), *RESPONSE_MODELS, *ITEM_MODELS, *RUN_MODELS]
    _, top = models_json_schema(
        [(model, "validation") for model in models], ref_template="#/components/schemas/{model}"
    )
    defs: dict[str, Any] = dict(top.get("$defs", {}))
    # The stream payloads are TypedDicts (the encoders build frames with them at no cost).
    response_events = {t.__name__: t for t in RESPONSE_EVENT_TYPES.values()}
    streamed = wire_schemas({**CHUNK_TYPES, **response_events}, "#/components/schemas/", mode="validation")
    streamed.update(run_event_schemas("#/components/schemas/"))
    streamed = _body_refs(streamed)
    defs.update(wire_schemas({"OutputItem": OutputItem}, "#/components/schemas/", mode="validation"))
    for name, schema in streamed.items():
        if name in defs and defs[name] != schema:
            raise ValueError(f"two API wire types are both named {name!r}")
        defs[name] = schema
    # The envelope is self-contained so that clients can validate an error without the document.
    defs["Error"] = _inline(defs["Error"], defs)
    defs["Object"] = OBJECT
    return defs
