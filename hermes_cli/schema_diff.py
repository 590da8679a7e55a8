"""``hermes schema diff``: classify the changes between two exports as breaking or not.

Each document kind names its messages and their direction, then
:class:`~hermes_cli.schema_compare.SchemaComparer` compares them: an OpenRPC document (methods:
params in, result out; ``x-events`` out; ``x-error-codes``), an OpenAPI document (operations:
parameters and request body in, responses and ``x-hermes-sse-events`` out) and a plain JSON Schema
with ACP's ``x-side`` (requests and notifications an agent handles are input, its responses
output; the client's the other way round) and Hermes' ``x-meta-extensions`` (out).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_cli.schema_compare import Change, Direction, SchemaComparer, experimental
from hermes_cli.schema_export import EXPORT_FORMAT, MANIFEST

HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


class NotAnExport(Exception):
    """A path given to ``hermes schema diff`` is not a readable export (exit 2)."""


@dataclass(frozen=True, slots=True)
class Export:
    """A loaded export: its manifest and documents.

    :param path: the export's folder.
    :param version: ``schema_version``.
    :param documents: protocol name → (kind, document).
    """

    path: Path
    version: str
    documents: dict[str, tuple[str, Any]]

    @property
    def major(self) -> int:
        """The major part of ``schema_version``."""
        return int(self.version.split(".", 1)[0])


def load_export(path: Path) -> Export:
    """Read an export folder (or its ``manifest.json``).

    :raises NotAnExport: missing, unreadable or not an export, with the reason.
    """
    folder = path.parent if path.name == MANIFEST and path.is_file() else path
    manifest_path = folder / MANIFEST
    if not folder.is_dir() or not manifest_path.is_file():
        raise NotAnExport(
            f"{path}: not a schema export (no {MANIFEST}; make one with `hermes schema export`)"
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise NotAnExport(f"{manifest_path}: not a schema export ({exc})") from None
    version = manifest.get("schema_version") if isinstance(manifest, dict) else None
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != EXPORT_FORMAT
        or not isinstance(version, str)
        or not version.split(".", 1)[0].isdigit()
        or not isinstance(manifest.get("documents"), dict)
    ):
        raise NotAnExport(f"{manifest_path}: not a schema export (expected format {EXPORT_FORMAT!r})")
    documents: dict[str, tuple[str, Any]] = {}
    for name, entry in manifest["documents"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise NotAnExport(f"{manifest_path}: document {name!r} has no file")
        file = folder / entry["file"]
        try:
            documents[name] = (str(entry.get("kind")), json.loads(file.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise NotAnExport(f"{file}: cannot read the {name} document ({exc})") from None
    return Export(folder, version, documents)


def diff_exports(old: Export, new: Export) -> list[Change]:
    """Return every change from ``old`` to ``new``, protocol by protocol."""
    changes: list[Change] = []
    for name, (kind, old_doc) in sorted(old.documents.items()):
        if name not in new.documents:
            changes.append(Change(True, name, "protocol removed from the export"))
            continue
        new_kind, new_doc = new.documents[name]
        if new_kind != kind:
            changes.append(Change(True, name, f"document kind changed from {kind} to {new_kind}"))
            continue
        cmp = SchemaComparer(old_doc, new_doc, name)
        {"openrpc": _openrpc, "openapi": _openapi, "jsonschema": _jsonschema}.get(kind, _unknown)(cmp)
        changes.extend(cmp.changes)
    for name in sorted(set(new.documents) - set(old.documents)):
        changes.append(Change(False, name, "protocol added"))
    return changes


def _unknown(cmp: SchemaComparer) -> None:
    cmp.note(False, "document", "unknown kind: not compared")


def _named(items: Any, key: str = "name") -> dict[str, Any]:
    if isinstance(items, dict):
        return items
    return {item[key]: item for item in items or () if isinstance(item, dict) and key in item}


def _gone(cmp: SchemaComparer, old: dict[str, Any], new: dict[str, Any], label: str) -> list[str]:
    """Report removed and added entries; return the names both have (experimental ones left out)."""
    both = []
    for name, entry in old.items():
        if experimental(entry):
            continue
        if name not in new:
            cmp.note(True, f"{label} {name}", "removed")
        elif not experimental(new[name]):
            both.append(name)
    for name, entry in new.items():
        if name not in old and not experimental(entry):
            cmp.note(False, f"{label} {name}", "added")
    return both


def _openrpc(cmp: SchemaComparer) -> None:
    old, new = cmp.old_doc, cmp.new_doc
    old_methods, new_methods = _named(old.get("methods")), _named(new.get("methods"))
    for name in _gone(cmp, old_methods, new_methods, "method"):
        if old_methods[name].get("x-typed") is False and new_methods[name].get("x-typed") is not False:
            # An untyped method read whatever it read; describing those params now adds no
            # demand on clients (the result is compared as usual: any object before).
            cmp.note(False, f"method {name}", "params and result typed (were not described)")
        else:
            _params(cmp, old_methods[name], new_methods[name], f"method {name}")
        o_res, n_res = old_methods[name].get("result") or {}, new_methods[name].get("result") or {}
        cmp.compare(o_res.get("schema", {}), n_res.get("schema", {}), "output", f"method {name} result")
    old_events, new_events = old.get("x-events") or {}, new.get("x-events") or {}
    for name in _gone(cmp, old_events, new_events, "event"):
        cmp.compare(
            old_events[name].get("schema", {}), new_events[name].get("schema", {}), "output", f"event {name}"
        )
    o_note, n_note = old.get("x-notification") or {}, new.get("x-notification") or {}
    cmp.compare(o_note.get("params", {}), n_note.get("params", {}), "output", "event envelope")
    old_codes = {str(e.get("code")): e for e in old.get("x-error-codes") or ()}
    new_codes = {str(e.get("code")): e for e in new.get("x-error-codes") or ()}
    _gone(cmp, old_codes, new_codes, "error code")


def _params(cmp: SchemaComparer, old: dict[str, Any], new: dict[str, Any], where: str) -> None:
    old_p, new_p = _named(old.get("params")), _named(new.get("params"))
    for name, param in old_p.items():
        if name not in new_p:
            cmp.note(False, where, f"param {name!r} no longer read")
            continue
        if not param.get("required") and new_p[name].get("required"):
            cmp.note(True, where, f"param {name!r} became required")
        cmp.compare(param.get("schema", {}), new_p[name].get("schema", {}), "input", f"{where} param {name}")
    for name, param in new_p.items():
        if name not in old_p:
            required = bool(param.get("required"))
            cmp.note(required, where, f"{'required' if required else 'optional'} param {name!r} added")


def _operations(doc: Any) -> dict[str, Any]:
    ops: dict[str, Any] = {}
    for path, item in (doc.get("paths") or {}).items():
        for method in HTTP_METHODS:
            if isinstance(item, dict) and isinstance(item.get(method), dict):
                op = item[method]
                if experimental(item):
                    op = {**op, "x-experimental": True}
                ops[f"{method.upper()} {path}"] = op
    return ops


def _openapi(cmp: SchemaComparer) -> None:
    old_ops, new_ops = _operations(cmp.old_doc), _operations(cmp.new_doc)
    for name in _gone(cmp, old_ops, new_ops, "operation"):
        old, new = old_ops[name], new_ops[name]
        old_params = {f"{p.get('in')}:{p.get('name')}": p for p in old.get("parameters") or ()}
        new_params = {f"{p.get('in')}:{p.get('name')}": p for p in new.get("parameters") or ()}
        _params(cmp, {"params": old_params}, {"params": new_params}, f"operation {name}")
        o_body, n_body = old.get("requestBody") or {}, new.get("requestBody") or {}
        if n_body.get("required") and not o_body.get("required"):
            cmp.note(True, f"operation {name}", "request body became required")
        for media, content in (o_body.get("content") or {}).items():
            n_content = (n_body.get("content") or {}).get(media)
            if n_content is None:
                cmp.note(True, f"operation {name}", f"request body {media} no longer accepted")
            else:
                cmp.compare(content.get("schema", {}), n_content.get("schema", {}), "input", f"{name} body")
        _responses(cmp, old.get("responses") or {}, new.get("responses") or {}, name)
        old_sse, new_sse = old.get("x-hermes-sse-events") or {}, new.get("x-hermes-sse-events") or {}
        for event in _gone(cmp, old_sse, new_sse, f"{name} stream event"):
            cmp.compare(old_sse[event], new_sse[event], "output", f"{name} stream event {event}")


def _responses(cmp: SchemaComparer, old: dict[str, Any], new: dict[str, Any], name: str) -> None:
    for status, response in old.items():
        if status not in new:
            cmp.note(status.startswith("2"), f"operation {name}", f"response {status} removed")
            continue
        o_resp, _ = cmp._resolve(cmp.old_doc, response)
        n_resp, _ = cmp._resolve(cmp.new_doc, new[status])
        for media, content in (o_resp.get("content") or {}).items():
            n_content = (n_resp.get("content") or {}).get(media)
            if n_content is None:
                cmp.note(status.startswith("2"), f"operation {name}", f"response {status} {media} removed")
                continue
            cmp.compare(content.get("schema", {}), n_content.get("schema", {}), "output", f"{name} {status}")


def _acp_direction(name: str, definition: Any) -> Direction | None:
    side = definition.get("x-side") if isinstance(definition, dict) else None
    if side not in ("agent", "client", "protocol"):
        return None
    received = name.endswith(("Request", "Notification"))
    if side == "client":
        received = not received
    return "input" if received else "output"


def _jsonschema(cmp: SchemaComparer) -> None:
    old_defs, new_defs = cmp.old_doc.get("$defs") or {}, cmp.new_doc.get("$defs") or {}
    roots = {name: d for name, d in old_defs.items() if _acp_direction(name, d) is not None}
    new_roots = {name: d for name, d in new_defs.items() if _acp_direction(name, d) is not None}
    for name in _gone(cmp, roots, new_roots, "message"):
        direction = _acp_direction(name, roots[name])
        assert direction is not None
        cmp.compare(roots[name], new_roots[name], direction, f"message {name}")
    old_meta, new_meta = (
        cmp.old_doc.get("x-meta-extensions") or {},
        cmp.new_doc.get("x-meta-extensions") or {},
    )
    for name in _gone(cmp, old_meta, new_meta, "_meta of"):
        direction = _acp_direction(name, old_defs.get(name)) or "output"
        cmp.compare(old_meta[name], new_meta[name], direction, f"_meta of {name}")
