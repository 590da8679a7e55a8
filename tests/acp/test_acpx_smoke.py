"""Smoke scenarios through an independent client, the ``acpx`` npm CLI (docs/protocols/acp.md).

``acpx`` is found as ``$ACPX_BIN``, else ``acpx`` on ``PATH``, else in ``.ci/acpx`` of this
checkout; when none is there and ``npm`` is, the first test installs ``acpx@0.19.1`` into
``.ci/acpx`` (one ``npm install`` from the npm registry). Without node and npm these tests fail
and say so; ``HERMES_TEST_SKIP_ACPX=1`` skips them on purpose. Every JSON-RPC line acpx prints is
validated with ``wire.py``.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.acp import wire
from tests.acp.conftest import HERMES, Home
from tests.acp.helpers import tool

ACPX_VERSION = "0.19.1"
REPO = Path(__file__).resolve().parents[2]
LOCAL = REPO / ".ci" / "acpx"
# These tests need node and the acpx npm CLI, which pip does not install. HERMES_TEST_SKIP_ACPX=1
# skips them on purpose; otherwise a missing acpx is installed, or the tests fail saying why.
pytestmark = pytest.mark.skipif(
    os.environ.get("HERMES_TEST_SKIP_ACPX") == "1", reason="HERMES_TEST_SKIP_ACPX=1 was set"
)


@functools.cache
def _find_or_install_acpx() -> str:
    found = os.environ.get("ACPX_BIN") or shutil.which("acpx")
    local = LOCAL / "node_modules" / ".bin" / "acpx"
    if found:
        return found
    if local.exists():
        return str(local)
    npm = shutil.which("npm")
    assert npm and shutil.which("node"), (
        f"the acpx smoke tests need node and npm (to install acpx {ACPX_VERSION} into .ci/acpx); "
        "install them, point ACPX_BIN at an acpx binary, or set HERMES_TEST_SKIP_ACPX=1 to skip these tests"
    )
    quiet = ("--silent", "--no-audit", "--no-fund")
    done = subprocess.run(
        [npm, "install", *quiet, "--prefix", str(LOCAL), f"acpx@{ACPX_VERSION}"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and local.exists(), f"npm install acpx@{ACPX_VERSION} failed:\n{done.stderr}"
    return str(local)


@pytest.fixture(autouse=True)
def _acpx_is_installed() -> None:
    _find_or_install_acpx()


def _run(home: Home, tmp_path: Path, *args: str, ttl: str = "1") -> tuple[int, list[dict[str, Any]]]:
    env = home.env(HOME=str(tmp_path / "acpx-home"))
    (tmp_path / "acpx-home").mkdir(exist_ok=True)
    done = subprocess.run(
        [_find_or_install_acpx(), "--agent", f"{HERMES} acp", "--format", "json", "--ttl", ttl, *args],
        cwd=home.workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=50,
    )
    frames = []
    for line in done.stdout.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue  # acpx prints a cosmetic label too
        if isinstance(value, dict) and value.get("jsonrpc") == "2.0":
            frames.append(value)
    return done.returncode, frames


def _directed(frames: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Give each frame its direction (``in`` = agent to client), pairing responses by id."""
    out: list[tuple[str, dict[str, Any]]] = []
    open_requests: list[tuple[str, Any]] = []
    for frame in frames:
        if "method" in frame:
            direction = "in" if frame["method"] in wire.CLIENT_METHODS else "out"
            if "id" in frame:
                open_requests.append((direction, frame["id"]))
            out.append((direction, frame))
            continue
        for index in range(len(open_requests) - 1, -1, -1):
            direction, request_id = open_requests[index]
            if request_id == frame.get("id"):
                del open_requests[index]
                out.append(("in" if direction == "out" else "out", frame))
                break
    return out


def _check(frames: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    directed = _directed(frames)
    problems = wire.validate_frames(directed) + wire.invariants(directed)
    assert not problems, problems[:10]
    return directed


def _stop_reasons(directed: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [
        m["result"]["stopReason"]
        for d, m in directed
        if d == "in" and "stopReason" in (m.get("result") or {})
    ]


def test_exec_hi(home: Home, tmp_path: Path) -> None:
    code, frames = _run(home, tmp_path, "--approve-all", "exec", "hi")
    assert code == 0
    assert _stop_reasons(_check(frames)) == ["end_turn"]


def test_deny_all_leaves_the_file(home: Home, tmp_path: Path) -> None:
    target = home.workspace / "keep.txt"
    target.write_text("keep\n")
    code, frames = _run(
        home, tmp_path, "--deny-all", "exec", tool("write_file", path="keep.txt", content="x")
    )
    # acpx 0.19.1 exits 5 (its PERMISSION_DENIED code) after denying a request; the turn itself ends normally.
    assert code in (0, 5)
    directed = _check(frames)
    assert _stop_reasons(directed) == ["end_turn"]
    assert target.read_text() == "keep\n"
    finals = [u for u in wire.updates(directed) if u.get("status") in ("completed", "failed")]
    assert [u["status"] for u in finals] == ["failed"]


def test_no_fs_no_terminal(home: Home, tmp_path: Path) -> None:
    (home.workspace / "r.txt").write_text("r\n")
    code, frames = _run(
        home, tmp_path, "--no-fs", "--no-terminal", "--approve-all", "exec", tool("read_file", path="r.txt")
    )
    assert code == 0
    directed = _check(frames)
    assert not [m for d, m in directed if str(m.get("method", "")).startswith(("fs/", "terminal/"))]


def test_session_remembers(home: Home, tmp_path: Path) -> None:
    home.config["model"] = "mock:history"
    home.write_config()
    # One acpx queue owner serves all three commands (a second Hermes process could not open the
    # session while the first still holds its writer lease); close it at the end.
    try:
        assert _run(home, tmp_path, "sessions", "new", ttl="30")[0] == 0
        assert _run(home, tmp_path, "first words", ttl="30")[0] == 0
        code, frames = _run(home, tmp_path, "second words", ttl="30")
    finally:
        _run(home, tmp_path, "sessions", "close", ttl="30")
    assert code == 0
    text = "".join(
        u["content"]["text"]
        for u in wire.updates(_check(frames))
        if u.get("sessionUpdate") == "agent_message_chunk"
    )
    assert "first words" in text and "second words" in text
