"""The cyclic garbage collector's policy for long-running transports (``hermes api``, ``tui``,
``acp``, ``pi``): one place, applied once a transport's start is over.

Two things, after :func:`hermes_cli.startup_gc.settle` has frozen what start-up made:

- the youngest generation is collected every ``2000`` net container allocations instead of
  CPython's ``700``, and a middle or full collection waits for ``20`` of the one below instead
  of ``10``. A server's young objects are mostly the in-flight requests' coroutines, futures
  and records: a young collection scans all of them and promotes every one still alive, to be
  scanned again by the middle and full collections. Collecting a little less often lets more
  of them finish first, so far fewer reach the older generations (at bursts of 50 requests:
  about six middle collections instead of 35 per 1,000 requests, and no full one), while a
  young collection stays short (its cost grows with the threshold: about 0.4 µs of CPU per
  object scanned, ~1 ms at 2,000; ``7000`` made each 3-5 ms of CPU, tens of ms on a loaded
  machine, which a stream's deltas feel as gaps);
- what the process made while starting was frozen already (``gc.freeze``: kept out of every
  collection), so a full collection only walks what the transport created since.

``HERMES_GC_THRESHOLD`` overrides it: three integers (``"700,10,10"``) for other thresholds, or
``default`` to leave CPython's. Measurements: bench/README.md (issue #30, GC policy).
"""

from __future__ import annotations

import gc
import logging
import os

log = logging.getLogger("hermes.cli")

ENV = "HERMES_GC_THRESHOLD"
#: Thresholds of generations 0, 1 and 2 (see ``gc.set_threshold``) for a long-running server.
SERVER_THRESHOLDS: tuple[int, int, int] = (2000, 20, 20)


def chosen(value: str | None) -> tuple[int, int, int] | None:
    """The thresholds ``HERMES_GC_THRESHOLD`` asks for: None leaves CPython's as they are.

    Unset or empty: :data:`SERVER_THRESHOLDS`. A value that is neither ``default`` nor three
    positive integers is reported and ignored (the policy's thresholds apply).
    """
    text = (value or "").strip().lower()
    if not text:
        return SERVER_THRESHOLDS
    if text in ("default", "off", "python"):
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 3 and all(p.isdigit() and int(p) > 0 for p in parts):
        return int(parts[0]), int(parts[1]), int(parts[2])
    log.warning(
        "%s=%r: expected three positive integers or 'default'; using %s", ENV, value, SERVER_THRESHOLDS
    )
    return SERVER_THRESHOLDS


def apply() -> tuple[int, int, int] | None:
    """Set the collector's thresholds for a long-running server; return them (None: untouched)."""
    thresholds = chosen(os.environ.get(ENV))
    if thresholds is not None:
        gc.set_threshold(*thresholds)
    return thresholds
