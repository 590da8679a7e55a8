"""New sessions' folders: made and checked on the executor, a loop pass's worth per job; a new
session's own folder only once a tool is about to run in it (docs/reference/core.md#workspace)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from concurrent.futures import Executor
from pathlib import Path

from hermes_core.workspace import WorkspaceError, check_workspace


def _prepare_folder(path: Path) -> Path:
    """Make a new session's folder when missing, then check it (runs on the executor).

    A folder this call made is a directory and no link, so it resolves to its parent's resolved
    path plus its name: the parent (the server's workspaces folder, the same for every session)
    is resolved once per process and then only compared by one ``stat``, instead of resolving
    every component of the path per session (a c=50 burst of new API sessions spent most of
    its executor time in ``realpath``).
    """
    if path.is_absolute() and path.name not in ("", ".", "..") and path.name.isascii():
        try:
            path.mkdir()
        except OSError:
            pass  # there already, or its parent is missing: the full way below
        else:
            parent = _resolved_parent(path.parent)
            if parent is not None:
                return parent / path.name
    with contextlib.suppress(OSError):
        path.mkdir(parents=True, exist_ok=True)  # a failure is named by the check
    made = check_workspace(path)
    if path.is_absolute():
        _resolved_parent(path.parent)  # known from now on (the first session made the parent too)
    return made


# A folder's text -> (its device and inode, its resolved path); a handful of folders per process.
_PARENTS: dict[str, tuple[tuple[int, int], Path]] = {}


def _resolved_parent(parent: Path) -> Path | None:
    """Return the resolved ``parent``, or None when it is not a valid workspace itself."""
    key = str(parent)
    try:
        stat = os.stat(key)
    except OSError:
        return None
    ident = (stat.st_dev, stat.st_ino)
    known = _PARENTS.get(key)
    if known is not None and known[0] == ident:
        return known[1]
    try:
        resolved = check_workspace(parent)
    except WorkspaceError:
        return None
    if len(_PARENTS) > 64:
        _PARENTS.clear()
    _PARENTS[key] = (ident, resolved)
    return resolved


class FolderBatch:
    """Prepare new sessions' folders on the executor, one job for all asked in one loop pass.

    A burst of new sessions (50 stateless API requests at once) asked the executor once per
    session: a submission, a worker's wake-up and a loop wake-up each, ~3% of the loop's time
    in a c=50 burst (issue #30). Folders asked for in one pass of the loop now share one job.

    :param executor: where the filesystem calls run.
    """

    def __init__(self, executor: Executor) -> None:
        self._executor = executor
        self._asked: list[tuple[Path, asyncio.Future[Path]]] = []

    def prepare(self, path: Path) -> asyncio.Future[Path]:
        """Return a future of ``path`` made (when missing) and checked, as ``_prepare_folder``."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Path] = loop.create_future()
        if not self._asked:
            loop.call_soon(self._send)
        self._asked.append((path, future))
        return future

    def predict(self, path: Path) -> Path | None:
        """Return what :meth:`prepare` will hand back for a folder it makes, when known now.

        That is the parent's resolved path (known once a folder was made in it) plus the name;
        None when the parent was not seen yet or ``path`` takes the full way.
        """
        if not (path.is_absolute() and path.name not in ("", ".", "..") and path.name.isascii()):
            return None
        known = _PARENTS.get(str(path.parent))
        return None if known is None else known[1] / path.name

    def _send(self) -> None:
        asked, self._asked = self._asked, []
        try:
            job = asyncio.get_running_loop().run_in_executor(
                self._executor, _prepare_folders, [path for path, _ in asked]
            )
        except BaseException as exc:  # the executor is shut down (the kernel is stopping)
            for _, future in asked:
                if not future.done():
                    future.set_exception(exc)
            return

        def hand_out(job: asyncio.Future[list[Path | BaseException]]) -> None:
            if job.cancelled():
                for _, future in asked:
                    future.cancel()
                return
            failure = job.exception()
            results: list[Path | BaseException] = (
                [failure] * len(asked) if failure is not None else job.result()
            )
            for (_, future), result in zip(asked, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)

        job.add_done_callback(hand_out)


def _prepare_folders(paths: list[Path]) -> list[Path | BaseException]:
    """Run ``_prepare_folder`` for each path, keeping each one's failure apart (executor)."""
    out: list[Path | BaseException] = []
    for path in paths:
        try:
            out.append(_prepare_folder(path))
        except Exception as exc:
            out.append(exc)
    return out


class LazyFolder:
    """A new session's folder, made the first time a tool is about to run in it.

    A new API chat's folder (the server's workspaces folder plus the session id) is needed by
    tools only, and most chats run none: made as the session opened it cost every chat an
    ``mkdir`` (0.1-0.4 ms on this machine's disk, more as the workspaces folder grows) and, on the
    executor, a thread's wake-up its first write waited for. Its resolved path is known before it
    exists (:meth:`FolderBatch.predict`), so the session is stored with it at once.

    :param batch: makes the folder (on the executor).
    :param path: the folder asked for.
    :param predicted: its resolved path, which the session records.
    """

    def __init__(self, batch: FolderBatch, path: Path, predicted: Path) -> None:
        self._batch = batch
        self._path = path
        self._predicted = predicted
        self._made = False

    async def ready(self) -> None:
        """Make the folder when missing (once); raise ``WorkspaceError`` when it cannot be made,
        or ``InvalidValue`` when it resolves elsewhere than the session recorded."""
        if self._made:
            return
        made = await self._batch.prepare(self._path)
        if made != self._predicted:
            from hermes_core.errors import InvalidValue

            raise InvalidValue("cwd", message=f"the folder resolves to {made}, not {self._predicted}")
        self._made = True
