"""Capabilities, model options and the OpenAPI document (checks 29, 30)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from hermes_api_server.openapi_doc import build_document
from tests.api.api_helpers import Server, assert_error, call
from tests.timing import scaled

OPERATION_IDS = {
    "getHealth", "getHealthV1", "getHealthDetailed", "listModels", "retrieveModel", "getModelOptions",
    "getCapabilities", "getOpenApiDocument", "createChatCompletion", "createResponse", "retrieveResponse",
    "deleteResponse", "listInputItems", "cancelResponse", "createRun", "listRuns", "getRun",
    "streamRunEvents", "steerRun", "respondRunApproval", "stopRun",
    "registerBrowserController", "connectBrowserControl", "listKeys", "createKey", "revokeKey",
}  # fmt: skip


async def test_capabilities_follow_config(server: Server, make_server: Callable[..., Server]) -> None:
    caps = (await call(server, "GET", "/v1/capabilities")).json
    assert caps["object"] == "hermes.api_server.capabilities"
    features = caps["features"]
    assert features["cors"] is False and features["tool_progress_events"] is True
    assert features["browser_extension_control"]["enabled"] is False
    assert features["session_chat"] is False and features["skills_api"] is False
    assert "browser_control_register" not in caps["endpoints"]
    for entry in caps["endpoints"].values():
        path = (
            entry["path"]
            .replace("{run_id}", "run_x")
            .replace("{response_id}", "resp_x")
            .replace("{model}", "hermes-agent")
        )
        reply = await call(server, entry["method"], path, {} if entry["method"] == "POST" else None)
        assert reply.status not in (405,) and reply.headers.get("Content-Type", ""), entry
        if reply.status == 404:
            assert reply.json["error"]["code"] != "not_found", entry
    other = make_server(
        '[api_server]\ncors_origins = ["http://x"]\ntool_progress_events = false\nshow_reasoning = true\n'
    )
    features = (await call(other, "GET", "/v1/capabilities")).json["features"]
    assert features["cors"] is True and features["tool_progress_events"] is False
    assert features["reasoning_streaming"] is True


async def test_openapi_lists_every_route_with_operation_ids(server: Server) -> None:
    reply = await call(server, "GET", "/openapi.json", auth=False)
    assert reply.status == 200
    doc = reply.json
    assert doc["openapi"] == "3.1.0" and doc["servers"] == [{"url": "/"}]
    ops = {
        op["operationId"]: (method, path)
        for path, item in doc["paths"].items()
        for method, op in item.items()
    }
    assert set(ops) == OPERATION_IDS
    assert doc == build_document(doc["info"]["version"])
    public = {
        op["operationId"]
        for item in doc["paths"].values()
        for op in item.values()
        if op.get("security") == []
    }
    assert public == {"getHealth", "getHealthV1", "getOpenApiDocument", "connectBrowserControl"}
    error_schema = doc["components"]["schemas"]["Error"]
    bad = await call(server, "GET", "/v1/runs/run_x")
    jsonschema.validate(bad.json, error_schema)


def test_router_and_document_list_the_same_operations() -> None:
    from types import SimpleNamespace

    from hermes_api_server.app import build_app

    settings = SimpleNamespace(max_body_bytes=100, console=False)  # the console is no API operation
    app = build_app(SimpleNamespace(settings=settings))  # type: ignore[arg-type]
    served = {
        (route.method.lower(), route.resource.canonical)
        for route in app.router.routes()
        if route.method != "HEAD" and route.resource is not None
    }
    doc = build_document()
    documented = {(method, path) for path, item in doc["paths"].items() for method in item}
    assert served == documented


def test_document_is_valid_openapi_31() -> None:
    from schemathesis.specs.openapi.definitions import OPENAPI_31

    jsonschema.Draft202012Validator(OPENAPI_31).validate(build_document())
    broken = build_document()
    broken["paths"]["/health"]["get"]["responses"] = "nope"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(OPENAPI_31).validate(broken)


async def test_model_options_returns_the_core_catalog(server: Server) -> None:
    reply = await call(server, "GET", "/api/model/options")
    assert reply.status == 200
    body = reply.json
    assert body["object"] == "hermes.model_options"
    assert body["refreshed"] is False
    assert any(p["slug"] == "mock" for p in body["providers"])
    assert "api_key" not in reply.text
    refreshed = (await call(server, "GET", "/api/model/options?refresh=YES")).json
    assert refreshed["refreshed"] is True


async def test_model_selection_works_without_the_model_switch_plugin(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server(env={"HERMES_DISABLE_PLUGINS": "model-switch"})
    assert (await call(srv, "GET", "/api/model/options")).status == 200
    reply = await call(
        srv,
        "POST",
        "/v1/chat/completions",
        {"model": "mock:alt", "messages": [{"role": "user", "content": "x"}]},
    )
    assert reply.json["choices"][0]["message"]["content"] == "alt: You said: x"


async def test_browser_control_is_off_and_404_after_auth(server: Server) -> None:
    assert_error(
        await call(server, "POST", "/v1/browser-control/register", {}, auth=False), 401, "invalid_api_key"
    )
    assert_error(
        await call(server, "POST", "/v1/browser-control/register", {}), 404, "browser_control_disabled"
    )
    assert_error(
        await call(server, "GET", "/v1/browser-control/ws", auth=False), 404, "browser_control_disabled"
    )


SCHEMATHESIS = shutil.which("schemathesis", path=str(Path(sys.executable).parent))


@pytest.mark.timeout(150)
def test_schemathesis_conformance(server: Server) -> None:
    assert SCHEMATHESIS is not None, "schemathesis is missing: pip install -e '.[test]'"
    checks = ",".join(
        [
            "not_a_server_error",
            "status_code_conformance",
            "content_type_conformance",
            "response_schema_conformance",
            "response_headers_conformance",
        ]
    )
    result = subprocess.run(
        [
            str(SCHEMATHESIS),
            "run",
            f"{server.base}/openapi.json",
            "--checks",
            checks,
            "--max-examples",
            "5",
            "--header",
            f"Authorization: Bearer {server.key}",
            "--request-timeout",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=140,
        env={**os.environ, "SCHEMATHESIS_HOOKS": ""},
        check=False,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


async def test_model_options_probe_policy_with_counting_fakes(make_server: Callable[..., Server]) -> None:
    from aiohttp import web

    hits: dict[str, int] = {"a": 0, "b": 0}

    def app_for(name: str) -> web.Application:
        async def models(request: web.Request) -> web.Response:
            hits[name] += 1
            return web.json_response({"object": "list", "data": [{"id": f"{name}-model", "object": "model"}]})

        app = web.Application()
        app.router.add_get("/v1/models", models)
        return app

    runners = []
    ports = {}
    for name in hits:
        runner = web.AppRunner(app_for(name))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        ports[name] = runner.addresses[0][1]
    try:
        dead = _closed_port()
        config = (
            'model = "a:a-model"\n'
            f'[[providers.custom]]\nname = "a"\nbase_url = "http://127.0.0.1:{ports["a"]}/v1"\n'
            f'[[providers.custom]]\nname = "b"\nbase_url = "http://127.0.0.1:{ports["b"]}/v1"\n'
            f'[[providers.custom]]\nname = "dead"\nbase_url = "http://127.0.0.1:{dead}/v1"\n'
        )
        srv = make_server(config)
        normal = (await call(srv, "GET", "/api/model/options")).json
        assert hits["a"] >= 1 and hits["b"] == 0
        by_slug = {p["slug"]: p for p in normal["providers"]}
        assert by_slug["a"]["is_current"] is True and by_slug["b"]["probe"]["status"] != "live"
        hits.update(a=0, b=0)
        started = asyncio.get_running_loop().time()
        refreshed = (await call(srv, "GET", "/api/model/options?refresh=on")).json
        assert asyncio.get_running_loop().time() - started < scaled(7)
        assert hits["a"] >= 1 and hits["b"] >= 1
        by_slug = {p["slug"]: p for p in refreshed["providers"]}
        assert by_slug["dead"]["probe"]["status"] == "failed"
        assert by_slug["b"]["models"] == ["b-model"]
    finally:
        for runner in runners:
            await runner.cleanup()


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
