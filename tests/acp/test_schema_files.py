"""The vendored ACP schema is complete, unmodified and licensed (``hermes_acp/acp_schema/README.md``)."""

from __future__ import annotations

import hashlib
import re

from tests.acp import wire


def test_the_schema_files_match_their_recorded_checksums() -> None:
    readme = (wire.SCHEMA_DIR / "README.md").read_text(encoding="utf-8")
    recorded = dict((name, digest) for digest, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", readme, re.M))
    assert set(recorded) == {"schema.json", "schema.unstable.json"}
    for name, digest in recorded.items():
        assert hashlib.sha256((wire.SCHEMA_DIR / name).read_bytes()).hexdigest() == digest, name
    assert "Apache License" in (wire.SCHEMA_DIR / "LICENSE").read_text(encoding="utf-8")


def test_every_mapped_definition_exists() -> None:
    names = [n for pair in [*wire.AGENT_METHODS.values(), *wire.CLIENT_METHODS.values()] for n in pair]
    for name in names:
        if not name or name.startswith("legacy:"):
            continue
        which, _, bare = name.rpartition(":")
        assert bare in wire._defs("unstable" if which == "unstable" else "stable"), name
