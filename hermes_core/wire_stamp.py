"""The version and checksum of the wire schemas that ``hermes schema export`` writes.

Every transport announces these two at run time (``gateway.ready``, ``GET /v1/capabilities``,
ACP ``initialize``), so a host can tell which schema the server it talks to speaks without
building the documents (docs/integrating.md#schema-version). ``SCHEMA_SHA256`` is the ``sha256``
of a fresh export; ``tests/schema/test_stamp.py`` fails when a change to a wire model leaves it
stale. Raise ``SCHEMA_VERSION``'s major part for a breaking change (CONTRIBUTING.md, "The
schema gate").
"""

from __future__ import annotations

#: The schemas' semantic version: ``MAJOR.MINOR.PATCH``.
SCHEMA_VERSION = "1.4.0"
#: The ``sha256`` recorded in the export's ``manifest.json`` for this version of the code.
SCHEMA_SHA256 = "1f551b9b1179331e554f2075d766617c890a068ec1d8fe022ce7165faa369603"


def schema_stamp() -> dict[str, str]:
    """Return ``{"version": SCHEMA_VERSION, "sha256": SCHEMA_SHA256}``, what every transport announces."""
    return {"version": SCHEMA_VERSION, "sha256": SCHEMA_SHA256}
