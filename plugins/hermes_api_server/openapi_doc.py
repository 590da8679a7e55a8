"""Build the static OpenAPI 3.1 document (docs/reference/api-server.md#get-openapijson): every route, its
operationId, statuses and schemas.

The schemas of the bodies and stream payloads are :mod:`hermes_api_server.openapi_schemas`'.
"""

from __future__ import annotations

import copy
from typing import Any

from hermes_api_server.openapi_schemas import OBJECT, SSE_EVENTS, component_schemas

ERROR_STATUSES = {
    "400": "Bad request",
    "401": "Missing or invalid API key",
    "403": "Origin not allowed, or the key lacks the route's scope",
    "404": "Not found",
    "405": "Method not allowed",
    "409": "Conflict",
    "413": "Body too large",
    "429": "Too many concurrent runs",
    "500": "Internal error",
    "502": "The agent failed before producing text",
    "503": "Draining",
}
SSE_FRAME = {
    "type": "object",
    "additionalProperties": True,
    "properties": {"data": {"type": "string"}, "event": {"type": "string"}, "id": {"type": "string"}},
}
CHAT_STREAM_NOTE = (
    "With stream: data frames are chat.completion.chunk objects, then data: [DONE]. Named "
    "hermes.tool.progress frames carry a chunk whose one choice has an empty delta, the progress "
    "fields and a top-level status event ({type: status, data: {description, done}}). A failed "
    'turn sends, just before its final chunk, a bare JSON line {"error": {message, type}} that '
    "is no SSE field (SSE parsers ignore it; Open WebUI stores it with the message). "
    "X-OpenWebUI-Chat-Id and X-OpenWebUI-User-Id are the default chat_id_headers and "
    "user_id_headers (docs/reference/api-server.md#chat-sessions)."
)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _op(
    op_id: str,
    summary: str,
    ok: dict[str, dict[str, Any]],
    errors: tuple[str, ...],
    *,
    body: dict[str, Any] | None = None,
    public: bool = False,
    params: list[dict[str, Any]] | None = None,
    stream: bool = False,
) -> dict[str, Any]:
    responses: dict[str, Any] = dict(ok)
    for status in errors:
        responses[status] = {"$ref": f"#/components/responses/E{status}"}
    op: dict[str, Any] = {"operationId": op_id, "summary": summary, "responses": responses}
    if public:
        op["security"] = []
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    if params:
        op["parameters"] = params
    if stream:
        for status, entry in responses.items():
            if status.startswith("2") and "content" in entry:
                entry["content"]["text/event-stream"] = {"schema": SSE_FRAME}
        op["x-hermes-sse-events"] = SSE_EVENTS.get(op_id, {})
    return op


def _path(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _query(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema}


LIST_QUERY: dict[str, dict[str, Any]] = {
    "after": {"type": "string"},
    "before": {"type": "string"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
    "order": {"enum": ["asc", "desc"], "default": "desc"},
}


def _header(name: str) -> dict[str, Any]:
    return {"name": name, "in": "header", "required": False, "schema": {"type": "string"}}


AGENT = ("400", "401", "403", "404", "409", "413", "429", "500", "502", "503")
READ = ("401", "403", "404", "500")


def build_document(version: str = "0.1.0") -> dict[str, Any]:
    """Return the OpenAPI 3.1 document (identical on every deployment).

    :param version: the package version for ``info.version``.
    """
    session_headers = [_header("X-Hermes-Session-Id"), _header("X-Hermes-Session-Key")]
    run_id = [_path("run_id")]
    paths: dict[str, Any] = {
        "/health": {
            "get": _op("getHealth", "Liveness probe", {"200": _json(_ref("Health"))}, ("403",), public=True)
        },
        "/v1/health": {
            "get": _op("getHealthV1", "Liveness probe", {"200": _json(_ref("Health"))}, ("403",), public=True)
        },
        "/health/detailed": {
            "get": _op(
                "getHealthDetailed",
                "Readiness and counters (503 when storage fails)",
                {"200": _json(_ref("HealthDetailed")), "503": _json(_ref("HealthDetailed"))},
                READ,
            )
        },
        "/v1/models": {
            "get": _op(
                "listModels",
                "List the virtual models",
                {"200": _json(_ref("ModelList"))},
                READ,
            )
        },
        "/v1/models/{model}": {
            "get": _op(
                "retrieveModel",
                "Retrieve one model",
                {"200": _json(_ref("ModelEntry"))},
                READ,
                params=[_path("model")],
            )
        },
        "/api/model/options": {
            "get": _op(
                "getModelOptions",
                "The model picker inventory",
                {"200": _json(_ref("ModelOptionsList"))},
                READ,
                params=[{"name": "refresh", "in": "query", "required": False, "schema": {"type": "string"}}],
            )
        },
        "/v1/capabilities": {
            "get": _op("getCapabilities", "What this server does", {"200": _json(_ref("Capabilities"))}, READ)
        },
        "/openapi.json": {
            "get": _op("getOpenApiDocument", "This document", {"200": _json(OBJECT)}, ("403",), public=True)
        },
        "/v1/chat/completions": {
            "post": _op(
                "createChatCompletion",
                "Run one agent turn (OpenAI chat completions)",
                {"200": _json(_ref("ChatCompletion"))},
                AGENT,
                body=_ref("ChatCompletionRequest"),
                params=[
                    *session_headers,
                    _header("Idempotency-Key"),
                    _header("X-Hermes-Workspace"),
                    _header("X-OpenWebUI-Chat-Id"),
                    _header("X-OpenWebUI-User-Id"),
                ],
                stream=True,
            )
            | {"description": CHAT_STREAM_NOTE}
        },
        "/v1/responses": {
            "post": _op(
                "createResponse",
                "Run one agent turn (OpenAI Responses)",
                {"200": _json(_ref("ResponseObject"))},
                AGENT,
                body=_ref("ResponseCreateRequest"),
                params=[*session_headers, _header("Idempotency-Key"), _header("X-Hermes-Workspace")],
                stream=True,
            )
        },
        "/v1/responses/{response_id}": {
            "get": _op(
                "retrieveResponse",
                "Retrieve a stored response; resume a background response's stream",
                {"200": _json(_ref("ResponseObject"))},
                ("400", *READ, "409"),
                params=[
                    _path("response_id"),
                    _query("stream", {"type": "boolean", "default": False}),
                    _query("starting_after", {"type": "integer", "minimum": 0}),
                ],
                stream=True,
            ),
            "delete": _op(
                "deleteResponse",
                "Delete a stored response",
                {"200": _json(_ref("ResponseDeleted"))},
                READ,
                params=[_path("response_id")],
            ),
        },
        "/v1/responses/{response_id}/input_items": {
            "get": _op(
                "listInputItems",
                "The input items a response was given, a page at a time",
                {"200": _json(_ref("InputItemList"))},
                ("400", *READ),
                params=[_path("response_id"), *(_query(n, t) for n, t in LIST_QUERY.items())],
            )
        },
        "/v1/responses/{response_id}/cancel": {
            "post": _op(
                "cancelResponse",
                "Stop a response whose turn still runs",
                {"200": _json(_ref("ResponseObject"))},
                ("400", *READ, "409"),
                params=[_path("response_id")],
            )
        },
        "/v1/runs": {
            "post": _op(
                "createRun",
                "Start an agent run",
                {"202": _json(_ref("RunAccepted"), "Accepted")},
                AGENT,
                body=_ref("RunCreateRequest"),
                params=[*session_headers, _header("Idempotency-Key"), _header("X-Hermes-Workspace")],
            ),
            "get": _op(
                "listRuns",
                "The key's newest runs, from every instance sharing the database",
                {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {
                                "object": {"const": "list"},
                                "data": {"type": "array", "items": _ref("RunStatus")},
                            },
                            "required": ["object", "data"],
                        }
                    )
                },
                ("400", *READ, "503"),
                params=[
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                    }
                ],
            ),
        },
        "/v1/runs/{run_id}": {
            "get": _op("getRun", "A run's status", {"200": _json(_ref("RunStatus"))}, READ, params=run_id)
        },
        "/v1/runs/{run_id}/events": {
            "get": _op(
                "streamRunEvents",
                "A run's events (SSE with replay)",
                {"200": _json(OBJECT), "204": {"description": "The cursor is at the terminal event"}},
                ("400", *READ, "429", "503"),
                params=[
                    *run_id,
                    _header("Last-Event-ID"),
                    {"name": "after", "in": "query", "required": False, "schema": {"type": "string"}},
                ],
                stream=True,
            )
        },
        "/v1/runs/{run_id}/steer": {
            "post": _op(
                "steerRun",
                "Queue guidance for a running run",
                {"200": _json(_ref("SteerAccepted"))},
                ("400", "401", "403", "404", "409", "413", "500", "503"),
                body=_ref("SteerRequest"),
                params=run_id,
            )
        },
        "/v1/runs/{run_id}/approval": {
            "post": _op(
                "respondRunApproval",
                "Answer a run's approval request",
                {"200": _json(_ref("ApprovalResolved"))},
                ("400", "401", "403", "404", "409", "413", "500", "503"),
                body=_ref("ApprovalRequest"),
                params=run_id,
            )
        },
        "/v1/runs/{run_id}/stop": {
            "post": _op(
                "stopRun",
                "Stop a run",
                {"200": _json(_ref("RunStopped"))},
                ("400", "401", "403", "404", "409", "413", "500", "503"),
                params=run_id,
            )
        },
        "/v1/browser-control/register": {
            "post": _op(
                "registerBrowserController",
                "Register a browser controller (opt-in)",
                {"201": _json(_ref("BrowserRegistered"), "Registered")},
                ("400", "401", "403", "404", "413", "500", "503"),
                body=_ref("BrowserRegisterRequest"),
            )
        },
        "/v1/browser-control/ws": {
            "get": _op(
                "connectBrowserControl",
                "Controller WebSocket (ticket in Sec-WebSocket-Protocol)",
                {"101": {"description": "Switching protocols"}},
                ("400", "401", "403", "404", "500"),
                public=True,
            )
        },
    }
    from hermes_api_server.openapi_keys import key_paths, stamp_scopes

    paths.update(key_paths())
    stamp_scopes(paths)
    for path in ("/v1/browser-control/register", "/v1/browser-control/ws"):
        for op in paths[path].values():
            op["x-hermes-opt-in"] = True
    responses = {
        f"E{status}": {
            "description": text,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
        for status, text in ERROR_STATUSES.items()
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Hermes API server",
            "version": version,
            "description": "OpenAI-compatible agent API",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearerAuth": []}],
        "paths": copy.deepcopy(paths),
        "components": {
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
            "schemas": copy.deepcopy(component_schemas()),
            "responses": responses,
        },
    }
