"""Garbage-collector accounting for a benched server (``profile_api_burst.py --gc``).

Put on ``PYTHONPATH`` with ``GC_PROBE_FILE`` set, it counts the collections of each generation,
their time and what they freed; on ``SIGUSR1`` it writes the totals so far to that file as JSON
(with a sequence number, so the bench knows the answer is new). ``GC_PROBE_THRESHOLD`` (e.g.
``7000,10,10``) sets the collector's thresholds first, to try other values. Without
``GC_PROBE_FILE`` it does nothing.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import time
from typing import Any

_PATH = os.environ.get("GC_PROBE_FILE")


def _install(path: str) -> None:
    totals: dict[str, Any] = {"seq": 0, "count": [0, 0, 0], "ms": [0.0, 0.0, 0.0], "freed": [0, 0, 0]}
    totals["max_ms"] = [0.0, 0.0, 0.0]
    # CPU time of the collecting thread too: on a loaded machine the wall time of a collection
    # includes the time the process waited for a core.
    totals["cpu_ms"] = [0.0, 0.0, 0.0]
    totals["max_cpu_ms"] = [0.0, 0.0, 0.0]
    began = [0.0, 0.0]

    def on_collect(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
            began[1] = time.thread_time()
            return
        gen = info["generation"]
        took = (time.perf_counter() - began[0]) * 1000
        cpu = (time.thread_time() - began[1]) * 1000
        totals["cpu_ms"][gen] += cpu
        totals["max_cpu_ms"][gen] = max(totals["max_cpu_ms"][gen], cpu)
        totals["count"][gen] += 1
        totals["ms"][gen] += took
        totals["freed"][gen] += info["collected"]
        totals["max_ms"][gen] = max(totals["max_ms"][gen], took)

    def dump(*_: object) -> None:
        totals["seq"] += 1
        with open(path + ".tmp", "w") as f:
            json.dump(totals, f)
        os.replace(path + ".tmp", path)

    thresholds = os.environ.get("GC_PROBE_THRESHOLD")
    if thresholds:
        gc.set_threshold(*(int(t) for t in thresholds.split(",")))
    gc.callbacks.append(on_collect)
    signal.signal(signal.SIGUSR1, dump)


if _PATH:
    _install(_PATH)
