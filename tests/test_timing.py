"""The shared waiting helpers and the one time scale factor (``HERMES_TEST_TIME_SCALE``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.timing import TIME_SCALE, eventually, eventually_sync, scaled

ROOT = Path(__file__).resolve().parent.parent


async def test_eventually_returns_the_first_truthy_value() -> None:
    ready: list[int] = []
    asyncio.get_running_loop().call_later(0.05, ready.append, 7)
    assert await eventually(lambda: ready) == [7]


async def test_eventually_awaits_a_coroutine_condition() -> None:
    calls: list[int] = []

    async def third_time() -> int:
        calls.append(1)
        return len(calls) if len(calls) >= 3 else 0

    assert await eventually(third_time, interval=0) == 3


async def test_eventually_fails_naming_what_it_waited_for() -> None:
    started = time.monotonic()
    with pytest.raises(AssertionError, match="the door to open did not happen"):
        await eventually(lambda: False, timeout=0.1, what="the door to open")
    assert time.monotonic() - started >= scaled(0.1)


def test_eventually_sync_polls_outside_a_loop() -> None:
    deadline = time.monotonic() + 0.05
    assert eventually_sync(lambda: time.monotonic() >= deadline) is True
    with pytest.raises(AssertionError, match="never"):
        eventually_sync(lambda: 0, timeout=0.05, what="never")


def _python(code: str, scale: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HERMES_TEST_TIME_SCALE"}
    if scale is not None:
        env["HERMES_TEST_TIME_SCALE"] = scale
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_the_factor_scales_limits_and_bad_values_are_refused() -> None:
    code = "from tests.timing import scaled; print(scaled(2))"
    assert _python(code, None).stdout.strip() == "2.0"
    assert _python(code, "3").stdout.strip() == "6.0"
    for bad in ("fast", "0", "-1"):
        done = _python(code, bad)
        assert done.returncode != 0 and "HERMES_TEST_TIME_SCALE" in done.stderr


def test_the_per_test_timeout_follows_the_factor(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("timeout")
    if TIME_SCALE == 1:
        assert marker is None  # the ini value (60 s) applies unchanged
    else:
        assert marker is not None and marker.args[0] == pytest.approx(60 * TIME_SCALE)


def test_a_raised_factor_reaches_pytest_timeout() -> None:
    env = {**os.environ, "HERMES_TEST_TIME_SCALE": "3"}
    target = "tests/test_timing.py::test_the_per_test_timeout_follows_the_factor"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", target],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
