"""Build the static OpenAPI 3.1 document: every route, its operationId and its statuses (§4.4)."""

from __future__ import annotations

import copy
from typing import Any

ERROR_STATUSES = {
    "400": "Bad request",
    "401": "Missing or invalid API key",
    "403": "Origin not allowed",
    "404": "Not found",
    "405": "Method not allowed",
    "409": "Conflict",
    "413": "Body too large",
    "429": "Too many concurrent runs",
    "500": "Internal error",
    "502": "The agent failed before producing text",
    "503": "Draining",
}
OBJECT = {"type": "object", "additionalProperties": True}
MESSAGE = {
    "type": "object",
    "additionalProperties": True,
    "required": ["role"],
    "properties": {
        "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool", "function"]},
        "content": {"anyOf": [{"type": "string"}, {"type": "array", "items": OBJECT}, {"type": "null"}]},
    },
}
CHAT_REQUEST = {
    "type": "object",
    "additionalProperties": True,
    "required": ["messages"],
    "properties": {
        "messages": {"type": "array", "minItems": 1, "items": MESSAGE},
        "model": {"type": "string"},
        "provider": {"type": "string"},
        "stream": {"type": "boolean"},
        "stream_options": OBJECT,
        "n": {"type": "integer"},
        "model_options": OBJECT,
    },
}
INPUT = {"anyOf": [{"type": "string", "minLength": 1}, {"type": "array", "minItems": 1, "items": {}}]}
RESPONSE_REQUEST = {
    "type": "object",
    "additionalProperties": True,
    "required": ["input"],
    "properties": {
        "input": INPUT,
        "instructions": {"type": "string"},
        "previous_response_id": {"type": "string"},
        "conversation": {"anyOf": [{"type": "string"}, OBJECT]},
        "conversation_history": {"type": "array", "items": OBJECT},
        "store": {"type": "boolean"},
        "stream": {"type": "boolean"},
        "model": {"type": "string"},
        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
RUN_REQUEST = {
    "type": "object",
    "additionalProperties": True,
    "required": ["input"],
    "properties": {
        "input": INPUT,
        "instructions": {"type": "string"},
        "session_id": {"type": "string"},
        "previous_response_id": {"type": "string"},
        "conversation_history": {"type": "array", "items": OBJECT},
        "model": {"type": "string"},
        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
        "cwd": {"type": "string"},
    },
}
STEER_REQUEST = {
    "type": "object",
    "additionalProperties": True,
    "properties": {"input": {}, "message": {}, "text": {}},
}
APPROVAL_REQUEST = {
    "type": "object",
    "additionalProperties": True,
    "required": ["choice"],
    "properties": {
        "choice": {"type": "string"},
        "request_id": {"type": "string"},
        "all": {"type": "boolean"},
        "resolve_all": {"type": "boolean"},
    },
}
REGISTER_REQUEST = {
    "type": "object",
    "additionalProperties": True,
    "required": ["protocol_version", "session_id", "controller_id", "browser_profile_id", "capabilities"],
    "properties": {
        "protocol_version": {"type": "integer"},
        "session_id": {"type": "string"},
        "controller_id": {"type": "string"},
        "browser_profile_id": {"type": "string"},
        "capabilities": {"type": "array", "items": {"type": "string"}},
    },
}
HEALTH = {
    "type": "object",
    "required": ["status", "platform", "version"],
    "properties": {
        "status": {"type": "string"},
        "platform": {"type": "string"},
        "version": {"type": "string"},
    },
}
MODEL = {
    "type": "object",
    "required": ["id", "object", "created", "owned_by"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "model"},
        "created": {"type": "integer"},
        "owned_by": {"type": "string"},
    },
}
CHAT_COMPLETION = {
    "type": "object",
    "required": ["id", "object", "created", "model", "choices"],
    "properties": {"object": {"const": "chat.completion"}, "choices": {"type": "array"}, "hermes": OBJECT},
}
RESPONSE_OBJECT = {
    "type": "object",
    "required": ["id", "object", "created_at", "status", "output"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "response"},
        "status": {"type": "string", "enum": ["in_progress", "completed", "incomplete", "failed"]},
        "output": {"type": "array", "items": OBJECT},
    },
}
RUN_STATUS = {
    "type": "object",
    "required": ["run_id", "status"],
    "properties": {"run_id": {"type": "string"}, "status": {"type": "string"}},
}
RUN_ACCEPTED = {
    "type": "object",
    "required": ["run_id", "status", "replayed", "session_id"],
    "properties": {
        "run_id": {"type": "string", "pattern": "^run_"},
        "status": {"type": "string"},
        "replayed": {"type": "boolean"},
        "session_id": {"type": "string"},
    },
}
SSE_FRAME = {
    "type": "object",
    "additionalProperties": True,
    "properties": {"data": {"type": "string"}, "event": {"type": "string"}, "id": {"type": "string"}},
}
SSE_EVENTS = {
    "createChatCompletion": {
        "chat.completion.chunk": "#/components/schemas/Object",
        "hermes.tool.progress": "#/components/schemas/Object",
    },
    "createResponse": {"response.*": "#/components/schemas/Object"},
    "streamRunEvents": {"run.*": "#/components/schemas/Object", "stream.gap": "#/components/schemas/Object"},
}


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
        "/health": {"get": _op("getHealth", "Liveness probe", {"200": _json(HEALTH)}, ("403",), public=True)},
        "/v1/health": {
            "get": _op("getHealthV1", "Liveness probe", {"200": _json(HEALTH)}, ("403",), public=True)
        },
        "/health/detailed": {
            "get": _op("getHealthDetailed", "Readiness and counters", {"200": _json(OBJECT)}, READ)
        },
        "/v1/models": {
            "get": _op(
                "listModels",
                "List the virtual models",
                {
                    "200": _json(
                        {
                            "type": "object",
                            "required": ["object", "data"],
                            "properties": {"data": {"type": "array", "items": MODEL}},
                        }
                    )
                },
                READ,
            )
        },
        "/v1/models/{model}": {
            "get": _op(
                "retrieveModel", "Retrieve one model", {"200": _json(MODEL)}, READ, params=[_path("model")]
            )
        },
        "/api/model/options": {
            "get": _op(
                "getModelOptions",
                "The model picker inventory",
                {"200": _json(OBJECT)},
                READ,
                params=[{"name": "refresh", "in": "query", "required": False, "schema": {"type": "string"}}],
            )
        },
        "/v1/capabilities": {
            "get": _op("getCapabilities", "What this server does", {"200": _json(OBJECT)}, READ)
        },
        "/openapi.json": {
            "get": _op("getOpenApiDocument", "This document", {"200": _json(OBJECT)}, ("403",), public=True)
        },
        "/v1/chat/completions": {
            "post": _op(
                "createChatCompletion",
                "Run one agent turn (OpenAI chat completions)",
                {"200": _json(CHAT_COMPLETION)},
                AGENT,
                body=CHAT_REQUEST,
                params=[*session_headers, _header("Idempotency-Key"), _header("X-Hermes-Workspace")],
                stream=True,
            )
        },
        "/v1/responses": {
            "post": _op(
                "createResponse",
                "Run one agent turn (OpenAI Responses)",
                {"200": _json(RESPONSE_OBJECT)},
                AGENT,
                body=RESPONSE_REQUEST,
                params=[*session_headers, _header("Idempotency-Key"), _header("X-Hermes-Workspace")],
                stream=True,
            )
        },
        "/v1/responses/{response_id}": {
            "get": _op(
                "retrieveResponse",
                "Retrieve a stored response",
                {"200": _json(RESPONSE_OBJECT)},
                READ,
                params=[_path("response_id")],
            ),
            "delete": _op(
                "deleteResponse",
                "Delete a stored response",
                {
                    "200": _json(
                        {
                            "type": "object",
                            "required": ["id", "deleted"],
                            "properties": {"deleted": {"const": True}},
                        }
                    )
                },
                READ,
                params=[_path("response_id")],
            ),
        },
        "/v1/runs": {
            "post": _op(
                "createRun",
                "Start an agent run",
                {"202": _json(RUN_ACCEPTED, "Accepted")},
                AGENT,
                body=RUN_REQUEST,
                params=[*session_headers, _header("Idempotency-Key"), _header("X-Hermes-Workspace")],
            )
        },
        "/v1/runs/{run_id}": {
            "get": _op("getRun", "A run's status", {"200": _json(RUN_STATUS)}, READ, params=run_id)
        },
        "/v1/runs/{run_id}/events": {
            "get": _op(
                "streamRunEvents",
                "A run's events (SSE with replay)",
                {"200": _json(OBJECT), "204": {"description": "The cursor is at the terminal event"}},
                ("400", *READ, "429"),
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
                {"200": _json(OBJECT)},
                ("400", "401", "403", "404", "409", "413", "500"),
                body=STEER_REQUEST,
                params=run_id,
            )
        },
        "/v1/runs/{run_id}/approval": {
            "post": _op(
                "respondRunApproval",
                "Answer a run's approval request",
                {"200": _json(OBJECT)},
                ("400", "401", "403", "404", "409", "413", "500"),
                body=APPROVAL_REQUEST,
                params=run_id,
            )
        },
        "/v1/runs/{run_id}/stop": {
            "post": _op(
                "stopRun",
                "Stop a run",
                {"200": _json(RUN_STATUS)},
                ("400", "401", "403", "404", "409", "413", "500"),
                params=run_id,
            )
        },
        "/v1/browser-control/register": {
            "post": _op(
                "registerBrowserController",
                "Register a browser controller (opt-in)",
                {"201": _json(OBJECT, "Registered")},
                ("400", "401", "403", "404", "413", "500", "503"),
                body=REGISTER_REQUEST,
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
    for path in ("/v1/browser-control/register", "/v1/browser-control/ws"):
        for op in paths[path].values():
            op["x-hermes-opt-in"] = True
    error_schema = {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["message", "type", "param", "code"],
                "properties": {
                    "message": {"type": "string"},
                    "type": {
                        "type": "string",
                        "enum": ["invalid_request_error", "rate_limit_error", "server_error"],
                    },
                    "param": {"type": ["string", "null"]},
                    "code": {"type": "string"},
                },
                "additionalProperties": True,
            }
        },
    }
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
            "schemas": {"Error": error_schema, "Object": OBJECT},
            "responses": responses,
        },
    }
