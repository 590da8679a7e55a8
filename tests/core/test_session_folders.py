"""New sessions' folders asked for in one loop pass are made by one executor job (issue #30),
each failure kept to its own session."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from hermes_core import WorkspaceError
from hermes_core.session.folders import FolderBatch


class CountingExecutor(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.jobs = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.jobs += 1
        return super().submit(fn, *args, **kwargs)


async def test_a_burst_of_folders_is_one_job(tmp_path: Path) -> None:
    executor = CountingExecutor()
    try:
        batch = FolderBatch(executor)
        made = await asyncio.gather(*(batch.prepare(tmp_path / f"s{i}") for i in range(20)))
        assert [p.name for p in made] == [f"s{i}" for i in range(20)]
        assert all(p.is_dir() and p.parent == tmp_path.resolve() for p in made)
        assert executor.jobs == 1
        again = await batch.prepare(tmp_path / "later")
        assert again.is_dir() and executor.jobs == 2
    finally:
        executor.shutdown()


async def test_one_folder_failing_fails_only_its_session(tmp_path: Path) -> None:
    executor = CountingExecutor()
    try:
        (tmp_path / "file").write_text("not a folder")
        batch = FolderBatch(executor)
        good = batch.prepare(tmp_path / "good")
        bad = batch.prepare(tmp_path / "file" / "below")
        assert (await good).is_dir()
        with pytest.raises(WorkspaceError):
            await bad
    finally:
        executor.shutdown()


async def test_a_deferred_folder_is_made_on_the_loop_when_asked(tmp_path: Path) -> None:
    """A new session's folder in a known parent waits for its first write, then is made at once,
    without an executor job; one that cannot be made fails its future."""
    executor = CountingExecutor()
    try:
        batch = FolderBatch(executor)
        assert (await batch.prepare(tmp_path / "first")).is_dir()  # the parent is known from now
        assert batch.predict(tmp_path / "later") == tmp_path.resolve() / "later"
        future, make = batch.defer(tmp_path / "later")
        await asyncio.sleep(0)
        assert not future.done() and not (tmp_path / "later").exists()
        make()
        assert future.result() == tmp_path.resolve() / "later" and (tmp_path / "later").is_dir()
        make()  # once only: a second call changes nothing
        (tmp_path / "taken").write_text("a file where the folder goes")
        refused, make_refused = batch.defer(tmp_path / "taken")
        make_refused()
        assert isinstance(refused.exception(), WorkspaceError)
        assert executor.jobs == 1
    finally:
        executor.shutdown()
