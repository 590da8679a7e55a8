"""The suite-wide guard (``tests/task_guard.py``) fails a test that drops a task exception, and
lets a test whose task exceptions are all retrieved pass: run on a throwaway test file in a
pytest of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.timing import scaled

ROOT = Path(__file__).resolve().parents[1]
INNER = """
import asyncio


def test_drops_a_failed_task() -> None:
    async def main() -> None:
        async def boom() -> None:
            raise RuntimeError("nobody looks at me")

        asyncio.get_running_loop().create_task(boom(), name="the-dropped-one")
        await asyncio.sleep(0.01)

    asyncio.run(main())


def test_retrieves_its_failed_task() -> None:
    async def main() -> None:
        async def boom() -> None:
            raise RuntimeError("looked at")

        task = asyncio.get_running_loop().create_task(boom())
        await asyncio.sleep(0.01)
        assert isinstance(task.exception(), RuntimeError)

    asyncio.run(main())


def test_after_the_others() -> None:
    assert True
"""


def test_a_dropped_task_exception_fails_the_test_that_dropped_it(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(INNER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.task_guard",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rA",
            "test_inner.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "ERROR test_inner.py::test_drops_a_failed_task" in out, out
    assert "Task exception was never retrieved" in out and "the-dropped-one" in out, out
    assert "PASSED test_inner.py::test_retrieves_its_failed_task" in out, out
    assert "PASSED test_inner.py::test_after_the_others" in out, out
