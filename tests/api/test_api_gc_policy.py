"""``hermes api`` runs with the server collector policy of hermes_cli/server_gc.py: start-up
frozen out of the collector's reach and the server's thresholds set, unless
``HERMES_GC_THRESHOLD`` says otherwise."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from hermes_cli import server_gc
from tests.api.api_helpers import start_server
from tests.timing import eventually_sync

# Loaded by the server's interpreter at start (``sitecustomize`` on PYTHONPATH): on SIGUSR1 it
# writes the collector's thresholds and how many objects are frozen, with a sequence number.
PROBE = """
import gc, json, os, signal
_seq = [0]
def _report(*_):
    _seq[0] += 1
    path = os.environ["GC_POLICY_PROBE"]
    with open(path + ".tmp", "w") as out:
        json.dump({"seq": _seq[0], "threshold": gc.get_threshold(), "frozen": gc.get_freeze_count()}, out)
    os.replace(path + ".tmp", path)
signal.signal(signal.SIGUSR1, _report)
"""


def _collector_of_server(tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    """Start ``hermes api`` with the probe, wait until it reports thresholds other than the
    interpreter's start-up ones or 5 s of reports pass, and return the last report."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(PROBE, encoding="utf-8")
    out = tmp_path / "gc.json"
    server = start_server(
        tmp_path / "home",
        config='model = "mock:echo"\n',
        env={"PYTHONPATH": str(site), "GC_POLICY_PROBE": str(out), **env},
    )
    try:
        seen = [0]

        def report() -> dict[str, Any] | None:
            if out.exists():
                found: dict[str, Any] = json.loads(out.read_text())
                if found["seq"] > seen[0]:
                    seen[0] = found["seq"]
                    return found if found["frozen"] > 0 else None
            os.kill(server.proc.pid, signal.SIGUSR1)
            return None

        return eventually_sync(report, timeout=15, interval=0.05, what="a report with start-up frozen")
    finally:
        server.stop()


def test_the_api_server_freezes_start_up_and_sets_the_server_thresholds(tmp_path: Path) -> None:
    found = _collector_of_server(tmp_path, {})
    assert tuple(found["threshold"]) == server_gc.SERVER_THRESHOLDS
    assert found["frozen"] > 10_000  # the modules, classes and functions of start-up


def test_hermes_gc_threshold_default_leaves_the_interpreter_thresholds(tmp_path: Path) -> None:
    found = _collector_of_server(tmp_path, {"HERMES_GC_THRESHOLD": "default"})
    assert tuple(found["threshold"]) == (700, 10, 10)


def test_hermes_gc_threshold_sets_other_thresholds(tmp_path: Path) -> None:
    found = _collector_of_server(tmp_path, {"HERMES_GC_THRESHOLD": "5000, 10,30"})
    assert tuple(found["threshold"]) == (5000, 10, 30)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, server_gc.SERVER_THRESHOLDS),
        ("", server_gc.SERVER_THRESHOLDS),
        ("default", None),
        ("Off", None),
        ("100,2,3", (100, 2, 3)),
        ("100,2", server_gc.SERVER_THRESHOLDS),
        ("0,1,1", server_gc.SERVER_THRESHOLDS),
        ("a,b,c", server_gc.SERVER_THRESHOLDS),
    ],
)
def test_the_setting_is_read_leniently(value: str | None, expected: tuple[int, int, int] | None) -> None:
    assert server_gc.chosen(value) == expected
