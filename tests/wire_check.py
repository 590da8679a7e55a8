"""Check frames the tests receive against the schema export (CONTRIBUTING.md, "The schema gate").

The test clients report every frame a server sends them here (the TUI clients in
``tests/tui/client.py``; the ACP recorder validates with ``tests/acp/wire.py``, which reads the
export's definitions through :func:`document`). A frame that does not follow the export is
recorded as a violation, and the autouse fixture in ``tests/conftest.py`` fails the test that
was running when it arrived. The documents are built in-process by the plugins' own
``hermes_schemas`` producers, exactly what ``hermes schema export`` writes.
"""

from __future__ import annotations

import json
import re
import threading
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

_lock = threading.Lock()
_violations: list[str] = []


@cache
def document(protocol: str) -> dict[str, Any]:
    """Return one exported document (``tui``, ``api``, ``acp``), built like the export builds it."""
    import importlib

    module = {
        "tui": "hermes_tui_gateway.plugin",
        "api": "hermes_api_server.plugin",
        "acp": "hermes_acp.plugin",
    }
    spec = importlib.import_module(module[protocol]).hermes_schemas()
    return dict(spec.build())


@cache
def _validator(protocol: str, name: str) -> Draft202012Validator:
    doc = document(protocol)
    if protocol == "acp":
        return Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": doc["$defs"]})
    return Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": doc["components"]})


def problems(protocol: str, name: str, value: Any) -> list[str]:
    """Validate ``value`` against one named schema of a document; return the problems."""
    return [
        f"{name}: {error.message} at {list(error.absolute_path)}"
        for error in _validator(protocol, name).iter_errors(value)
    ]


def record(problem: str) -> None:
    """Record a violation for the running test (thread-safe: readers run in threads)."""
    with _lock:
        _violations.append(problem)


def take() -> list[str]:
    """Return and clear the violations recorded so far."""
    with _lock:
        found = list(_violations)
        _violations.clear()
    return found


@cache
def _tui_codes() -> frozenset[int]:
    return frozenset(int(e["code"]) for e in document("tui")["x-error-codes"])


@cache
def _tui_results() -> dict[str, str]:
    """Return method -> result schema name, for the typed methods."""
    out = {}
    for method in document("tui")["methods"]:
        ref = method["result"]["schema"].get("$ref")
        if ref is not None:
            out[method["name"]] = ref.rsplit("/", 1)[1]
    return out


def tui_problems(frame: Any, method: str | None = None) -> list[str]:
    """Return how one frame the TUI gateway sent departs from the export (empty when it follows it).

    :param frame: the frame.
    :param method: for a response, the method of the request it answers (its result is checked).
    """
    if not isinstance(frame, dict) or "unparsable" in frame:
        return []  # framing is the transport tests' business
    if method is not None and "result" in frame and method in _tui_results():
        return [f"result of {method}: {p}" for p in problems("tui", _tui_results()[method], frame["result"])]
    if frame.get("method") == "event":
        params = frame.get("params")
        found = problems("tui", "EventParams", params)
        if found or not isinstance(params, dict):
            return [f"event envelope: {p}" for p in found]
        event = document("tui")["x-events"].get(params["type"])
        if event is None:
            return [f"event {params['type']!r} is not in the export (hermes_tui_gateway.wire.EVENTS)"]
        ref = event["schema"].get("$ref")
        if ref is None:
            return []
        return [
            f"event {params['type']}: {p}"
            for p in problems("tui", ref.rsplit("/", 1)[1], params.get("payload", {}))
        ]
    error = frame.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        if type(code) is not int or code not in _tui_codes():
            return [f"error code {code!r} is not in the export (hermes_tui_gateway.wire.ERROR_CODES)"]
    return []


def check_tui(frame: Any, method: str | None = None) -> None:
    """Record a violation when a frame the TUI gateway sent departs from the export
    (``method``: the request a response answers)."""
    for problem in tui_problems(frame, method):
        record(f"tui: {problem}: {str(frame)[:300]}")


@cache
def _api_routes() -> list[tuple[str, re.Pattern[str], str, dict[str, Any]]]:
    routes = []
    for path, item in document("api")["paths"].items():
        pattern = re.compile("^" + re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(path)) + "$")
        for method, op in item.items():
            if isinstance(op, dict):
                routes.append((method.upper(), pattern, path, op))
    return routes


def _api_operation(method: str, path: str) -> dict[str, Any] | None:
    bare = path.split("?", 1)[0]
    for verb, pattern, _template, op in _api_routes():
        if verb == method.upper() and pattern.match(bare):
            return op
    return None


def _schema_name(schema: Any) -> str | None:
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    return ref.rsplit("/", 1)[1] if isinstance(ref, str) else None


def api_problems(method: str, path: str, status: int, content_type: str, text: str) -> list[str]:
    """Return how one API response departs from the export (empty when it follows it or is not described)."""
    op = _api_operation(method, path)
    if op is None:
        return []
    response = op.get("responses", {}).get(str(status))
    if response is None:
        return []
    ref = _schema_name(response)
    if ref is not None:
        response = document("api")["components"]["responses"][ref]
    content = response.get("content") or {}
    if content_type.startswith("application/json") and "application/json" in content:
        try:
            body = json.loads(text)
        except ValueError:
            return [f"{status} body is not JSON"]
        name = _schema_name(content["application/json"].get("schema"))
        return problems("api", name, body) if name else []
    if content_type.startswith("text/event-stream"):
        return _sse_problems(op.get("x-hermes-sse-events") or {}, text)
    return []


def _sse_problems(events: dict[str, Any], text: str) -> list[str]:
    found: list[str] = []
    for block in text.split("\n\n"):
        name = None
        data = None
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and line[6:] != "[DONE]":
                try:
                    data = json.loads(line[6:])
                except ValueError:
                    data = None
        if not isinstance(data, dict):
            continue
        if name is None:
            # A chat chunk by its ``object``, a Responses event by its ``type``, a run event by
            # its ``event`` field (run event frames have no ``event:`` line).
            if data.get("object") == "chat.completion.chunk":
                name = "chat.completion.chunk"
            else:
                name = data.get("type") if isinstance(data.get("type"), str) else data.get("event")
        if name is None or name not in events:
            if events and name is not None:
                found.append(f"stream event {name!r} is not in the export")
            continue
        schema = _schema_name(events[name])
        if schema:
            found += [f"stream event {name}: {p}" for p in problems("api", schema, data)]
    return found


def check_api(method: str, path: str, status: int, content_type: str, text: str) -> None:
    """Record a violation when an API response departs from the export."""
    for problem in api_problems(method, path, status, content_type, text):
        record(f"api: {method} {path} {status}: {problem}")
