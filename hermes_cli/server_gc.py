"""The cyclic garbage collector's policy for long-running transports (``hermes api``, ``tui``,
``acp``, ``pi``): one place, applied once a transport's start is over.

Two things, after :func:`hermes_cli.startup_gc.settle` has frozen what start-up made (``gc.freeze``:
the modules, classes and plugin objects are kept out of every later collection):

- the youngest generation is collected every ``2000`` net container allocations instead of
  CPython's ``700`` (the older generations keep CPython's ``10, 10``). A server's young objects
  are mostly the in-flight requests' coroutines, futures and records: a young collection scans
  all of them and promotes every one still alive, to be scanned again by the middle and full
  collections. Collecting a little less often lets more of them finish first, so fewer reach
  the older generations: at bursts of 50 requests about a third of the middle collections and
  no full one, at 200 streams no full one either, and the collector's CPU time falls by about
  a third to a half. A young collection costs about 0.4 µs of CPU per object it scans, so
  ~1 ms at 2,000; at ``7000`` each took 3-5 ms of CPU, tens of ms of wall time on a loaded
  machine, which a stream's deltas feel as gaps. A higher middle threshold (``2000, 20, 20``)
  cost the same CPU with middle collections twice as long.

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
SERVER_THRESHOLDS: tuple[int, int, int] = (2000, 10, 10)


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
