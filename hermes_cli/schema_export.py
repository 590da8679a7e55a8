"""Write the plugins' wire-protocol documents as one reproducible export (docs/integrating.md).

An export is a folder: one ``<name>.json`` per :class:`~hermes_core.SchemaSpec` and a
``manifest.json`` naming them with their kind and checksum, the ``schema_version`` and the
export's ``sha256``. Every file is canonical JSON (sorted keys, two-space indent, UTF-8, one final
newline), so two exports of the same code are byte-identical.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_core import SCHEMA_VERSION, SchemaSpec

MANIFEST = "manifest.json"
#: ``manifest.json``'s ``format``: what ``hermes schema diff`` recognises as an export.
EXPORT_FORMAT = "hermes-schema-export/1"


def canonical(document: Any) -> bytes:
    """Return ``document`` as canonical JSON bytes (sorted keys, indent 2, final newline)."""
    return (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def export_sha256(files: Mapping[str, str]) -> str:
    """Return the export's checksum: the SHA-256 of ``"<file sha256>  <file name>\\n"`` lines sorted by name.

    :param files: file name → its SHA-256 (hex).
    """
    lines = "".join(f"{digest}  {name}\n" for name, digest in sorted(files.items()))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def build_export(specs: Mapping[str, SchemaSpec]) -> dict[str, bytes]:
    """Build every document and the manifest.

    :param specs: the registry's schema records by protocol name.
    :returns: file name → bytes, ``manifest.json`` included.
    """
    files: dict[str, bytes] = {}
    documents: dict[str, Any] = {}
    for name in sorted(specs):
        spec = specs[name]
        data = canonical(dict(spec.build()))
        file_name = f"{name}.json"
        files[file_name] = data
        documents[name] = {
            "file": file_name,
            "kind": spec.kind,
            "summary": spec.summary,
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    digest = export_sha256({d["file"]: d["sha256"] for d in documents.values()})
    manifest = {
        "format": EXPORT_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "sha256": digest,
        "documents": documents,
    }
    files[MANIFEST] = canonical(manifest)
    return files


def write_export(out: Path, files: Mapping[str, bytes]) -> None:
    """Write the files into ``out`` (created if needed); other files there are left alone."""
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
