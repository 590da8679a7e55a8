"""``hermes schema export``: reproducible, complete, valid JSON Schema, and its stamp is current."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from hermes_core import SCHEMA_SHA256, SCHEMA_VERSION
from tests.schema.conftest import Exported, export

ROOT = Path(__file__).resolve().parents[2]


def test_two_exports_are_byte_identical(exported: Exported, tmp_path: Path) -> None:
    again = export(tmp_path / "home", tmp_path / "again")
    names = sorted(p.name for p in exported.path.iterdir())
    assert names == ["acp.json", "api.json", "manifest.json", "tui.json"]
    assert sorted(p.name for p in again.iterdir()) == names
    for name in names:
        assert (again / name).read_bytes() == (exported.path / name).read_bytes(), name


def test_the_manifest_checksums_the_files(exported: Exported) -> None:
    manifest = exported.manifest
    assert manifest["format"] == "hermes-schema-export/1"
    assert manifest["schema_version"] == SCHEMA_VERSION
    lines = ""
    for name, entry in sorted(manifest["documents"].items(), key=lambda kv: kv[1]["file"]):
        digest = hashlib.sha256((exported.path / entry["file"]).read_bytes()).hexdigest()
        assert entry["sha256"] == digest, name
        lines += f"{digest}  {entry['file']}\n"
    assert manifest["sha256"] == hashlib.sha256(lines.encode()).hexdigest()
    kinds = {name: entry["kind"] for name, entry in manifest["documents"].items()}
    assert kinds == {"tui": "openrpc", "api": "openapi", "acp": "jsonschema"}


def test_the_announced_stamp_is_the_export_of_this_code(exported: Exported) -> None:
    """What the servers announce at run time (hermes_core.SCHEMA_SHA256) is this export's sha256."""
    fresh = exported.manifest["sha256"]
    assert SCHEMA_SHA256 == fresh, (
        f"hermes_core/wire_stamp.py is stale: a wire schema changed. Set SCHEMA_SHA256 = {fresh!r} "
        "(and raise SCHEMA_VERSION: major for a breaking change, CONTRIBUTING.md 'The schema gate')"
    )


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for item in node for r in _refs(item)]
    return []


def _resolves(doc: Any, ref: str) -> bool:
    node = doc
    for part in ref.removeprefix("#/").split("/"):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def test_every_schema_is_valid_2020_12_and_every_ref_resolves(exported: Exported) -> None:
    for protocol, doc in exported.documents.items():
        schemas = doc["$defs"] if protocol == "acp" else doc["components"]["schemas"]
        assert schemas, protocol
        for schema in schemas.values():
            Draft202012Validator.check_schema(schema)
        refs = _refs(doc)
        assert refs, protocol
        broken = sorted({r for r in refs if not r.startswith("#/") or not _resolves(doc, r)})
        assert not broken, f"{protocol}: {broken}"


def test_the_tui_document_lists_every_documented_event_and_error_code(exported: Exported) -> None:
    doc = exported.documents["tui"]
    assert doc["openrpc"].startswith("1.") and doc["info"]["version"] == SCHEMA_VERSION
    text = (ROOT / "docs/reference/tui-gateway.md").read_text(encoding="utf-8")
    catalog = text.split("### Event catalog", 1)[1].split("\n### ", 1)[0]
    documented = {
        name
        for row in catalog.splitlines()
        if row.startswith("| `")
        for name in re.findall(r"`([a-z_.]+)`", row.split("|")[1])
    }
    assert documented and documented <= set(doc["x-events"]), documented - set(doc["x-events"])
    codes = {e["code"] for e in doc["x-error-codes"]}
    errors = text.split("## Error codes", 1)[1]
    for code in re.findall(r"^\| (\d{4})", errors, re.M):
        assert int(code) in codes, code
    methods = {m["name"] for m in doc["methods"]}
    assert {"session.create", "prompt.submit", "session.interrupt", "session.events.since"} <= methods
    # Typed payloads point into components; the rest say they are not typed yet.
    for name, event in doc["x-events"].items():
        assert "$ref" in event["schema"] or event.get("x-typed") is False, name
    ready = doc["components"]["schemas"]["ReadyPayload"]
    assert set(ready["required"]) >= {"protocol", "replay_epoch", "capabilities", "schema"}


def test_the_api_document_describes_every_stream_payload(exported: Exported) -> None:
    doc = exported.documents["api"]
    assert doc["openapi"] == "3.1.0" and doc["info"]["version"] == SCHEMA_VERSION
    streams = {
        op["operationId"]: op["x-hermes-sse-events"]
        for item in doc["paths"].values()
        for op in item.values()
        if "x-hermes-sse-events" in op
    }
    assert {"createChatCompletion", "createResponse", "streamRunEvents"} <= set(streams)
    assert "chat.completion.chunk" in streams["createChatCompletion"]
    assert "response.output_text.delta" in streams["createResponse"]
    assert "message.delta" in streams["streamRunEvents"]
    caps = doc["components"]["schemas"]["Capabilities"]
    assert "schema" in caps["required"]


def test_the_acp_document_is_the_vendored_schema_plus_hermes_meta(exported: Exported) -> None:
    import json

    import hermes_acp

    doc = exported.documents["acp"]
    vendored_path = Path(hermes_acp.__file__).with_name("acp_schema") / "schema.json"
    vendored = json.loads(vendored_path.read_text(encoding="utf-8"))
    assert doc["x-vendored"]["sha256"] == hashlib.sha256(vendored_path.read_bytes()).hexdigest()
    for name, definition in vendored["$defs"].items():
        assert doc["$defs"][name] == definition, name
    extra = set(doc["$defs"]) - set(vendored["$defs"])
    assert extra and all(name.startswith("Hermes") for name in extra)
    assert doc["x-meta-extensions"] == {
        "InitializeResponse": {"$ref": "#/$defs/HermesInitializeMeta"},
        "PromptResponse": {"$ref": "#/$defs/HermesPromptMeta"},
    }
    exported.validator("acp", "HermesInitializeMeta").validate(
        {"hermes": {"schema": {"version": SCHEMA_VERSION, "sha256": SCHEMA_SHA256}}}
    )
    exported.validator("acp", "HermesPromptMeta").validate(
        {"hermes": {"stopReason": "budget_exceeded", "message": "over", "retryAfter": 3.0}}
    )
