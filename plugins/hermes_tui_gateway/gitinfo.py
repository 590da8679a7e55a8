"""The git branch of a session's workspace, for ``SessionInfo.branch`` and ``config.get cwd``
(docs/reference/tui-gateway.md#sessioninfo, #configuration-and-models).

The branch is read from the repository's ``HEAD`` file, never by running ``git``: ``session.info``
is built on the event loop, often, so the lookup must be a few cheap file-system calls. The
location of ``HEAD`` is cached per workspace and its content per modification time.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_HEAD_FOR: dict[str, tuple[Path | None, float]] = {}
_BRANCH_AT: dict[Path, tuple[int, str | None]] = {}
_CACHE_LIMIT = 256
_RECHECK_S = 5.0  # how long "not a repository" is believed before looking again


def _find_head(cwd: str) -> Path | None:
    """Return the ``HEAD`` file of the repository containing ``cwd``, or None outside one."""
    here = Path(cwd)
    for folder in (here, *here.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git / "HEAD"
        if dot_git.is_file():
            # A worktree or submodule: ".git" is a file naming the real git directory.
            try:
                line = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return None
            if not line.startswith("gitdir:"):
                return None
            target = Path(line[len("gitdir:") :].strip())
            return (target if target.is_absolute() else folder / target) / "HEAD"
    return None


def _parse_head(text: str) -> str | None:
    text = text.strip()
    if text.startswith("ref:"):
        ref = text[4:].strip()
        return ref.removeprefix("refs/heads/") or None
    # A detached HEAD holds a commit id; show it short, as git does.
    return text[:12] or None


def git_branch(cwd: str | None) -> str | None:
    """Return the checked-out branch (or the short commit of a detached HEAD) of ``cwd``'s repository.

    :param cwd: the workspace directory.
    :returns: the branch name, or None when ``cwd`` is not inside a git repository.
    """
    if not cwd:
        return None
    now = time.monotonic()
    found = _HEAD_FOR.get(cwd)
    if found is None or (found[0] is None and now - found[1] > _RECHECK_S):
        if len(_HEAD_FOR) >= _CACHE_LIMIT:
            _HEAD_FOR.clear()
        found = (_find_head(cwd), now)
        _HEAD_FOR[cwd] = found
    head = found[0]
    if head is None:
        return None
    try:
        mtime = os.stat(head).st_mtime_ns
    except OSError:
        _HEAD_FOR.pop(cwd, None)  # the repository went away; look again next time
        return None
    cached = _BRANCH_AT.get(head)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        branch = _parse_head(head.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    if len(_BRANCH_AT) >= _CACHE_LIMIT:
        _BRANCH_AT.clear()
    _BRANCH_AT[head] = (mtime, branch)
    return branch
