"""Fixtures for the schema tests: one real ``hermes schema export`` per session, and validators."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.cli.cli_helpers import run_hermes


@dataclass(frozen=True)
class Exported:
    """An export written by the real command."""

    path: Path
    manifest: dict[str, Any]
    documents: dict[str, Any]

    def validator(self, protocol: str, name: str) -> Draft202012Validator:
        """Return a validator for one named schema of a document (its ``$ref`` s resolved in it).

        :param protocol: ``tui``, ``api`` or ``acp``.
        :param name: a ``components.schemas`` name (TUI, API) or a ``$defs`` name (ACP).
        """
        doc = self.documents[protocol]
        if protocol == "acp":
            return Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": doc["$defs"]})
        return Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": doc["components"]})


def export(home: Path, out: Path) -> Path:
    """Run ``hermes schema export --out OUT`` and return ``out`` (fails the test on a non-zero exit)."""
    home.mkdir(parents=True, exist_ok=True)
    done = run_hermes(home, "schema", "export", "--out", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    return out


def load(out: Path) -> Exported:
    """Read an export folder."""
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    documents = {
        name: json.loads((out / entry["file"]).read_text(encoding="utf-8"))
        for name, entry in manifest["documents"].items()
    }
    return Exported(out, manifest, documents)


@pytest.fixture(scope="session")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Exported:
    """The export of this checkout (all first-party plugins), made once per session."""
    root = tmp_path_factory.mktemp("schema-export")
    return load(export(root / "home", root / "out"))
