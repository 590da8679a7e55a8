"""The one workspace (session folder) validator the core and every transport use, and the one
resolver that keeps a path given to a tool or a command inside that folder.

:func:`check_workspace` resolves a requested folder and raises :class:`WorkspaceError` naming
*which* rule failed (:class:`WorkspaceProblem`). It is an :class:`~hermes_core.errors.InvalidValue`,
so code that maps that error keeps working; transports that word the problem their own way map the
``problem`` to their wire error (ACP ``-32602``, TUI ``4017``, API ``invalid_workspace``).

:func:`resolve_in_workspace` turns a path a user or a model typed into an absolute path and
refuses one that lands outside the workspace once ``..`` and symlinks are followed
(``OUTSIDE_WORKSPACE``).
"""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from pathlib import Path

from hermes_core.errors import InvalidValue


def expand_home(path: str | Path) -> Path:
    """``Path(path).expanduser()`` that never raises: ``~name`` of a user this machine does not
    know (or ``~`` without a home) stays as written, as a shell leaves it, and then names a
    relative path like any other. ``Path.expanduser`` raises ``RuntimeError`` there, and the
    path comes from a client or a model.
    """
    return Path(os.path.expanduser(path))


class WorkspaceProblem(enum.Enum):
    """Why a folder is not acceptable as a workspace."""

    EMPTY = "empty"
    NOT_ABSOLUTE = "not_absolute"
    NOT_A_DIRECTORY = "not_a_directory"
    OUTSIDE_ROOTS = "outside_roots"
    NOT_TEXT = "not_text"  # sessions store their folder as text; a non-UTF-8 path cannot be kept
    NOT_A_PATH = "not_a_path"  # a NUL character: no file system has such a path
    OUTSIDE_WORKSPACE = "outside_workspace"  # a path inside a workspace was asked for, and it is not


_WORDING = {
    WorkspaceProblem.EMPTY: "{field} must not be empty",
    WorkspaceProblem.NOT_ABSOLUTE: "{field} must be an absolute path: {path}",
    WorkspaceProblem.NOT_A_DIRECTORY: "{field} is not an existing directory: {path}",
    WorkspaceProblem.OUTSIDE_ROOTS: "{field} is outside the allowed workspace roots: {path}",
    WorkspaceProblem.NOT_TEXT: "{field} is not valid UTF-8 text: {path}",
    WorkspaceProblem.NOT_A_PATH: "{field} is not a valid path: it contains a NUL character",
    WorkspaceProblem.OUTSIDE_WORKSPACE: "{field} is outside the workspace: {path}",
}


class WorkspaceError(InvalidValue):
    """A requested workspace breaks one rule; ``problem`` says which, ``path`` what was asked."""

    def __init__(self, problem: WorkspaceProblem, path: str, field: str = "cwd") -> None:
        shown = path.encode("utf-8", "backslashreplace").decode("utf-8")  # never a lone surrogate
        super().__init__(field, message=_WORDING[problem].format(field=field, path=shown))
        self.problem = problem
        self.path = path


def check_workspace(
    path: str | Path,
    *,
    field: str = "cwd",
    relative_to: Path | None = None,
    expand_user: bool = False,
    resolve: bool = True,
    roots: Sequence[str | Path] | None = None,
) -> Path:
    """Return the workspace ``path`` stands for, or raise :class:`WorkspaceError`.

    The rules, in this order: not empty; no NUL character; ``~`` expanded when ``expand_user``;
    absolute (a relative
    path is joined to ``relative_to`` when given, refused otherwise); an existing directory; valid
    UTF-8 text; inside
    one of ``roots`` when given (the root itself counts).

    :param path: the folder asked for.
    :param field: the parameter name the error names.
    :param resolve: return the path with symlinks resolved (else only made absolute).
    :returns: the absolute (by default resolved) directory.
    """
    text = str(path) if isinstance(path, Path) else path
    if not text:
        raise WorkspaceError(WorkspaceProblem.EMPTY, text, field)
    if "\x00" in text:
        raise WorkspaceError(WorkspaceProblem.NOT_A_PATH, text, field)
    candidate = expand_home(text) if expand_user else Path(text)
    if not candidate.is_absolute():
        if relative_to is None:
            raise WorkspaceError(WorkspaceProblem.NOT_ABSOLUTE, text, field)
        candidate = relative_to / candidate
    try:
        resolved = candidate.resolve()
        is_dir = resolved.is_dir()
    except OSError:  # a name too long for the file system, a loop of links: no folder either
        is_dir = False
    if not is_dir:
        raise WorkspaceError(WorkspaceProblem.NOT_A_DIRECTORY, text, field)
    try:
        str(resolved).encode("utf-8")
    except UnicodeEncodeError:
        raise WorkspaceError(WorkspaceProblem.NOT_TEXT, text, field) from None
    if roots is not None and not any(_inside(resolved, Path(root).resolve()) for root in roots):
        raise WorkspaceError(WorkspaceProblem.OUTSIDE_ROOTS, text, field)
    return resolved if resolve else candidate


def resolve_in_workspace(
    path: str | Path,
    workspace: Path,
    *,
    field: str = "path",
    also: Sequence[Path] = (),
) -> Path:
    """Return the absolute path ``path`` names inside ``workspace``, or raise :class:`WorkspaceError`.

    ``~`` is expanded, a relative path is joined to ``workspace``, then ``..`` and symlinks are
    resolved; the result must be the workspace itself or lie below it (a symlink in the workspace
    that points outside it is outside). Nothing needs to exist: a file about to be created
    resolves too.

    :param path: the path as typed (by a user, in a command's arguments, or by the model).
    :param workspace: the session's folder (``session.cwd``, ``ToolContext.cwd``).
    :param field: the name the error message gives the value.
    :param also: resolved paths that are allowed although outside (with what lies below them),
        such as the targets an approval already cleared.
    :returns: the resolved absolute path.
    :raises WorkspaceError: ``EMPTY`` for an empty path, ``NOT_A_PATH`` for one with a NUL
        character, ``OUTSIDE_WORKSPACE`` for one outside (or one that cannot be resolved, such as
        a symlink loop).
    """
    from hermes_core.approvals.paths import resolve_path

    text = str(path) if isinstance(path, Path) else path
    if not text:
        raise WorkspaceError(WorkspaceProblem.EMPTY, text, field)
    if "\x00" in text:
        raise WorkspaceError(WorkspaceProblem.NOT_A_PATH, text, field)
    resolved = resolve_path(expand_home(text), workspace)
    root = resolve_path(workspace)
    if resolved is not None and root is not None:
        if _inside(resolved, root) or any(_inside(resolved, extra) for extra in also):
            return resolved
    raise WorkspaceError(WorkspaceProblem.OUTSIDE_WORKSPACE, text, field)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
