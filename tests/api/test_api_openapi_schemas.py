"""The OpenAPI document: schemas come from the pydantic models, sample bodies validate, it is 3.1."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError

from hermes_api_server.openapi_doc import build_document
from hermes_api_server.request_models import REQUEST_MODELS, request_schemas
from tests.api.api_helpers import Server, call

EXAMPLES_FILE = Path(__file__).with_name("examples") / "bodies.json"

DOC = build_document()
PATHS = {
    op["operationId"]: (path, method) for path, item in DOC["paths"].items() for method, op in item.items()
}


# -- sample bodies ---------------------------------------------------------------------------------
def sample_bodies() -> list[tuple[str, str, Any]]:
    """Return ``(follows, kind, body)`` for each sample in ``examples/bodies.json``.

    ``kind`` is ``json`` for a whole response body and ``sse`` for the data of one stream event;
    ``follows`` names the operation and the status (or SSE event) whose schema the body follows.
    """
    data = json.loads(EXAMPLES_FILE.read_text(encoding="utf-8"))
    return [(item["follows"], item["kind"], item["body"]) for item in data["bodies"]]


def _with_components(schema: dict[str, Any]) -> dict[str, Any]:
    """Make ``#/components/...`` references resolvable from the schema itself."""
    return {**schema, "components": DOC["components"]}


def response_schema(op_id: str, status: str) -> dict[str, Any]:
    path, method = PATHS[op_id]
    entry = DOC["paths"][path][method]["responses"][status]
    if "$ref" in entry:
        entry = DOC["components"]["responses"][entry["$ref"].rsplit("/", 1)[1]]
    return dict(entry["content"]["application/json"]["schema"])


def sse_schema(op_id: str, event: str) -> dict[str, Any]:
    path, method = PATHS[op_id]
    return dict(DOC["paths"][path][method]["x-hermes-sse-events"][event])


def schema_for(kind: str, value: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Pick the document schema an example claims to follow; fail on an example nobody maps."""
    obj = value.get("object")
    if kind == "sse":
        if obj == "chat.completion.chunk":
            event = "hermes.tool.progress" if "tool" in value else "chat.completion.chunk"
            return f"createChatCompletion {event}", sse_schema("createChatCompletion", event)
        if "event" in value and "seq" in value:
            return f"streamRunEvents {value['event']}", sse_schema("streamRunEvents", value["event"])
        if str(value.get("type", "")).startswith("response."):
            return f"createResponse {value['type']}", sse_schema("createResponse", value["type"])
    table: dict[Any, tuple[str, str]] = {
        "list": ("listModels", "200"),
        "hermes.model_options": ("getModelOptions", "200"),
        "hermes.api_server.capabilities": ("getCapabilities", "200"),
        "chat.completion": ("createChatCompletion", "200"),
        "hermes.run": ("getRun", "200"),
        "hermes.run.steer": ("steerRun", "200"),
        "hermes.run.approval_response": ("respondRunApproval", "200"),
    }
    if obj in table:
        op_id, status = table[obj]
    elif obj == "response":
        op_id, status = ("deleteResponse", "200") if "deleted" in value else ("createResponse", "200")
    elif "error" in value:
        op_id, status = "getRun", "404"
    elif "ticket" in value:
        op_id, status = "registerBrowserController", "201"
    elif "replayed" in value:
        op_id, status = "createRun", "202"
    elif set(value) == {"run_id", "status"}:
        op_id, status = "stopRun", "200"
    elif set(value) == {"status", "platform", "version"}:
        op_id, status = "getHealth", "200"
    else:
        raise AssertionError(f"no schema is known for this example: {value}")
    return f"{op_id} {status}", response_schema(op_id, status)


EXAMPLES = sample_bodies()


def test_the_samples_cover_every_main_response() -> None:
    covered = {follows for follows, _, _ in EXAMPLES}
    assert covered >= {
        "listModels 200", "getModelOptions 200", "getCapabilities 200", "getHealth 200",
        "createChatCompletion 200", "createChatCompletion hermes.tool.progress", "createResponse 200",
        "deleteResponse 200", "createRun 202", "getRun 200", "getRun 404", "steerRun 200",
        "respondRunApproval 200", "stopRun 200", "streamRunEvents tool.started",
        "registerBrowserController 201",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("follows", "kind", "value"),
    EXAMPLES,
    ids=[f"{follows.replace(' ', '-')}-{i}" for i, (follows, _, _) in enumerate(EXAMPLES)],
)
def test_each_sample_validates_against_the_schema_it_follows(follows: str, kind: str, value: Any) -> None:
    where, schema = schema_for(kind, value)
    assert where == follows  # the sample is recognised as what it claims to be
    jsonschema.Draft202012Validator(_with_components(schema)).validate(value)


def test_a_wrong_example_is_refused() -> None:
    """The schemas are not vacuous: a plausible mistake in each main body fails validation."""
    by_op = {follows: value for follows, _, value in EXAMPLES}
    mistakes: list[tuple[dict[str, Any], Callable[[dict[str, Any]], None]]] = [
        (by_op["createChatCompletion 200"], lambda v: v["choices"][0].update(finish_reason="done")),
        (by_op["createChatCompletion 200"], lambda v: v["usage"].pop("total_tokens")),
        (by_op["createResponse 200"], lambda v: v["output"][1].update(output=["a list"])),
        (by_op["createResponse 200"], lambda v: v.update(status="running")),
        (by_op["getRun 200"], lambda v: v.update(status="done")),
        (by_op["getCapabilities 200"], lambda v: v["features"].pop("run_submission")),
        (by_op["getModelOptions 200"], lambda v: v["providers"][0]["probe"].update(status="ok")),
        (by_op["listModels 200"], lambda v: v["data"][0].update(created="yesterday")),
    ]
    for original, spoil in mistakes:
        value = json.loads(json.dumps(original))
        spoil(value)
        _, schema = schema_for("json", value)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft202012Validator(_with_components(schema)).validate(value)
    error = next(value for _, kind, value in EXAMPLES if kind == "json" and "error" in value)
    broken = json.loads(json.dumps(error))
    del broken["error"]["param"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, DOC["components"]["schemas"]["Error"])


# -- the document itself -------------------------------------------------------------------------
def test_request_bodies_are_the_pydantic_models_schemas() -> None:
    schemas = DOC["components"]["schemas"]
    generated = request_schemas()
    for op_id, model in REQUEST_MODELS.items():
        path, method = PATHS[op_id]
        body = DOC["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{model.__name__}"}
        assert schemas[model.__name__] == generated[model.__name__]
        # OpenAI-compatible bodies accept fields this server ignores
        # (docs/reference/api-server.md#limits-idempotency-and-extra-fields).
        assert schemas[model.__name__]["additionalProperties"] is True
        model.model_validate(_minimal_body(op_id)).model_dump()


def test_every_schema_is_valid_2020_12_and_every_ref_resolves() -> None:
    from schemathesis.specs.openapi.definitions import OPENAPI_31

    jsonschema.Draft202012Validator(OPENAPI_31).validate(DOC)
    for name, schema in DOC["components"]["schemas"].items():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert name
    refs = set(re.findall(r'"\$ref": "([^"]+)"', json.dumps(DOC)))
    for ref in refs:
        node: Any = DOC
        for key in ref.removeprefix("#/").split("/"):
            node = node[key]
        assert isinstance(node, dict), ref


def test_the_document_is_static_and_holds_no_settings(server: Server) -> None:
    assert build_document("9.9.9")["components"] == DOC["components"]
    text = json.dumps(DOC)
    assert server.key not in text and "127.0.0.1" not in text


async def test_the_served_document_matches_and_is_auth_free(server: Server) -> None:
    first = await call(server, "GET", "/openapi.json", auth=False)
    second = await call(server, "GET", "/openapi.json", auth=False)
    assert first.status == second.status == 200
    assert first.text == second.text
    assert first.json["components"] == DOC["components"]
    assert first.headers["Cache-Control"] == "public, max-age=300"
    assert first.headers["X-Frame-Options"] == "DENY"


# -- the models agree with the handlers ----------------------------------------------------------
def _minimal_body(op_id: str) -> dict[str, Any]:
    bodies: dict[str, dict[str, Any]] = {
        "createChatCompletion": {"messages": [{"role": "user", "content": "hi"}]},
        "createResponse": {"input": "hi"},
        "createRun": {"input": "hi"},
        "steerRun": {"input": "shorter"},
        "respondRunApproval": {"choice": "once"},
        "registerBrowserController": {
            "protocol_version": 1,
            "session_id": "s",
            "controller_id": "c",
            "browser_profile_id": "p",
            "capabilities": ["browser_click"],
        },
    }
    return bodies[op_id]


USER = {"role": "user", "content": "hi"}


def parts(*items: Any) -> dict[str, Any]:
    """Return a chat body whose one user message has these content parts."""
    return {"messages": [{"role": "user", "content": list(items)}]}


# (operation, body, whether the model accepts it); the server must agree: 400 exactly when refused.
AGREEMENT: list[tuple[str, dict[str, Any], bool]] = [
    ("createChatCompletion", {"messages": [USER], "unknown_field": {"x": 1}, "temperature": 0.2}, True),
    ("createChatCompletion", {"messages": [USER], "stream": "off", "n": 1, "model": "hermes-agent"}, True),
    ("createChatCompletion", parts({"type": "text", "text": "hi"}), True),
    (
        "createChatCompletion",
        {"messages": [USER], "model_options": {"reasoning_effort": "low", "x": 1}},
        True,
    ),
    ("createChatCompletion", {}, False),
    ("createChatCompletion", {"messages": []}, False),
    ("createChatCompletion", {"messages": [{"role": "robot", "content": "hi"}]}, False),
    ("createChatCompletion", {"messages": ["hi"]}, False),
    ("createChatCompletion", {"messages": [USER], "n": 2}, False),
    ("createChatCompletion", {"messages": [USER], "stream": "maybe"}, False),
    ("createChatCompletion", {"messages": [USER], "model": 5}, False),
    ("createChatCompletion", {"messages": [USER], "model_options": {"reasoning_effort": "huge"}}, False),
    ("createChatCompletion", {"messages": [USER], "model_options": "fast"}, False),
    ("createChatCompletion", parts({"type": "file", "file": {}}), False),
    ("createChatCompletion", parts({"type": "input_image", "image_url": "ftp://x"}), False),
    ("createChatCompletion", parts({"type": {}, "text": "x"}), False),
    ("createChatCompletion", parts(*["x"] * 1001), False),
    ("createResponse", {"input": "hi", "store": False, "metadata": {"a": "b"}, "truncation": "auto"}, True),
    (
        "createResponse",
        {"input": [{"role": "user", "content": "hi"}], "store": False, "reasoning": {"effort": "low"}},
        True,
    ),
    (
        "createResponse",
        {"input": "hi", "store": False, "conversation": {"id": "c1"}, "background": False},
        True,
    ),
    ("createResponse", {"input": ""}, False),
    ("createResponse", {"input": []}, False),
    ("createResponse", {"input": 5}, False),
    ("createResponse", {"input": "hi", "store": "yes"}, False),
    ("createResponse", {"input": "[[tokens 2]] hi", "background": True}, True),
    ("createResponse", {"input": "hi", "background": "yes"}, False),
    ("createResponse", {"input": "hi", "instructions": 7}, False),
    ("createResponse", {"input": "hi", "metadata": {"a": 1}}, False),
    ("createResponse", {"input": "hi", "metadata": {str(i): "v" for i in range(17)}}, False),
    ("createResponse", {"input": "hi", "conversation": {"name": "x"}}, False),
    ("createResponse", {"input": "hi", "reasoning": {"effort": "max"}}, False),
    ("createResponse", {"input": [{"type": "web_search_call"}]}, False),
    ("createRun", {"input": "hi", "metadata": {"ticket": "T-1"}, "session_id": "agreement:run-1"}, True),
    ("createRun", {"input": "hi", "session_id": "a/b"}, False),
    ("createRun", {"input": "hi", "session_id": ".."}, False),
    ("createRun", {"input": "hi", "session_id": "x" * 257}, False),
    ("createRun", {"input": "hi", "model_options": {"reasoning": {"enabled": "yes"}}}, False),
    ("createRun", {}, False),
]


def _accepts(model: type[BaseModel], body: dict[str, Any]) -> bool:
    try:
        model.model_validate(body)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize(
    ("op_id", "body", "accepted"), AGREEMENT, ids=[f"{o}-{i}" for i, (o, _, _) in enumerate(AGREEMENT)]
)
async def test_the_model_and_the_server_agree(
    server: Server, op_id: str, body: dict[str, Any], accepted: bool
) -> None:
    model = REQUEST_MODELS[op_id]
    assert _accepts(model, body) is accepted
    path, method = PATHS[op_id]
    schema = _with_components(
        DOC["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    )
    assert jsonschema.Draft202012Validator(schema).is_valid(body) is accepted
    reply = await call(server, method.upper(), path, body)
    if accepted:
        assert reply.status in (200, 202), reply.text
    else:
        assert reply.status == 400, reply.text
        assert reply.json["error"]["param"] is None or isinstance(reply.json["error"]["param"], str)
