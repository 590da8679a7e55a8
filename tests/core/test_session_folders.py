"""New sessions' folders asked for in one loop pass are made by one executor job (issue #30),
each failure kept to its own session; a new session's own folder is made on first use only."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from hermes_core import WorkspaceError
from hermes_core.session.folders import FolderBatch, LazyFolder


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


async def test_a_lazy_folder_is_made_once_when_asked(tmp_path: Path) -> None:
    """A new session's folder left for its first tool: nothing exists before ``ready()``; then it
    is made (once) where it was predicted; one that cannot be made raises every time asked."""
    executor = CountingExecutor()
    try:
        batch = FolderBatch(executor)
        assert (await batch.prepare(tmp_path / "first")).is_dir()  # the parent is known from now
        predicted = batch.predict(tmp_path / "later")
        assert predicted == tmp_path.resolve() / "later"
        lazy = LazyFolder(batch, tmp_path / "later", predicted)
        await asyncio.sleep(0)
        assert not (tmp_path / "later").exists() and executor.jobs == 1
        await lazy.ready()
        assert (tmp_path / "later").is_dir() and executor.jobs == 2
        await lazy.ready()
        assert executor.jobs == 2  # made once
        (tmp_path / "taken").write_text("a file where the folder goes")
        refused = LazyFolder(batch, tmp_path / "taken", tmp_path.resolve() / "taken")
        for _ in range(2):
            with pytest.raises(WorkspaceError):
                await refused.ready()
    finally:
        executor.shutdown()
