"""Build small exports for the ``hermes schema diff`` tests and run the real command on them."""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.cli.cli_helpers import run_hermes

KINDS = {"tui": "openrpc", "api": "openapi", "acp": "jsonschema"}


def write(out: Path, version: str = "1.0.0", **documents: Any) -> Path:
    """Write an export folder holding ``documents`` (protocol → document)."""
    out.mkdir(parents=True)
    entries = {}
    for name, doc in documents.items():
        (out / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
        entries[name] = {"file": f"{name}.json", "kind": KINDS[name], "summary": name, "sha256": "0" * 64}
    manifest = {
        "format": "hermes-schema-export/1",
        "schema_version": version,
        "sha256": "0" * 64,
        "documents": entries,
    }
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return out


def openrpc() -> dict[str, Any]:
    """A small OpenRPC document: one method, two events, one error code."""
    usage = {
        "type": "object",
        "properties": {
            "input": {"type": "integer"},
            "model": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["input", "model"],
    }
    done = {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "status": {"enum": ["complete", "error", "interrupted"], "type": "string"},
            "usage": {"$ref": "#/components/schemas/Usage"},
            "warning": {"type": "string"},
        },
        "required": ["text", "status", "usage"],
    }
    return {
        "openrpc": "1.3.2",
        "methods": [
            {
                "name": "session.create",
                "params": [{"name": "cwd", "schema": {"type": "string"}}],
                "result": {"name": "result", "schema": {"$ref": "#/components/schemas/Created"}},
            }
        ],
        "components": {
            "schemas": {
                "Usage": usage,
                "Done": done,
                "Created": {
                    "type": "object",
                    "properties": {
                        "session_id": {"type": "string"},
                        "part": {"oneOf": [{"$ref": "#/components/schemas/Usage"}, {"type": "string"}]},
                    },
                    "required": ["session_id"],
                },
                "Delta": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            }
        },
        "x-events": {
            "message.complete": {"schema": {"$ref": "#/components/schemas/Done"}},
            "message.delta": {"schema": {"$ref": "#/components/schemas/Delta"}},
        },
        "x-error-codes": [{"code": 4001, "message": "session not live"}],
    }


def openapi() -> dict[str, Any]:
    """A small OpenAPI document: one operation with a body, a response and a stream event."""
    return {
        "openapi": "3.1.0",
        "paths": {
            "/v1/runs": {
                "post": {
                    "operationId": "createRun",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"input": {"type": "string"}, "model": {"type": "string"}},
                                    "required": ["input"],
                                }
                            }
                        },
                    },
                    "responses": {
                        "202": {
                            "description": "OK",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {"run_id": {"type": "string"}},
                                        "required": ["run_id"],
                                    }
                                }
                            },
                        }
                    },
                    "x-hermes-sse-events": {
                        "run.completed": {"type": "object", "properties": {"output": {"type": "string"}}}
                    },
                }
            }
        },
        "components": {"schemas": {}},
    }


def acp() -> dict[str, Any]:
    """A small ACP-style document: one agent request and response, one client request and response."""

    def obj(side: str, **props: Any) -> dict[str, Any]:
        return {"type": "object", "x-side": side, "x-method": "m", "properties": props, "required": ["a"]}

    return {
        "$defs": {
            "PromptRequest": obj("agent", a={"type": "string"}),
            "PromptResponse": obj("agent", a={"type": "string"}),
            "ReadTextFileRequest": obj("client", a={"type": "string"}),
            "ReadTextFileResponse": obj("client", a={"type": "string"}),
        },
        "x-meta-extensions": {},
    }


Edit = Callable[[dict[str, Any]], None]


def diff(
    tmp_path: Path, protocol: str, edit: Edit, *args: str, version: str = "1.0.0", base: Edit | None = None
) -> subprocess.CompletedProcess[str]:
    """Export a base document (changed by ``base`` first, when given), apply ``edit`` to a copy,
    run ``hermes schema diff OLD NEW``."""
    before = {"tui": openrpc, "api": openapi, "acp": acp}[protocol]()
    if base is not None:
        base(before)
    changed = copy.deepcopy(before)
    edit(changed)
    old = write(tmp_path / "old", **{protocol: before})
    new = write(tmp_path / "new", version, **{protocol: changed})
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return run_hermes(home, "schema", "diff", *args, str(old), str(new))
