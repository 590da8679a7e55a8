"""The one workspace (session folder) validator the core and every transport use.

:func:`check_workspace` resolves a requested folder and raises :class:`WorkspaceError` naming
*which* rule failed (:class:`WorkspaceProblem`). It is an :class:`~hermes_core.errors.InvalidValue`,
so code that maps that error keeps working; transports that word the problem their own way map the
``problem`` to their wire error (ACP ``-32602``, TUI ``4017``, API ``invalid_workspace``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from pathlib import Path

from hermes_core.errors import InvalidValue


class WorkspaceProblem(enum.Enum):
    """Why a folder is not acceptable as a workspace."""

    EMPTY = "empty"
    NOT_ABSOLUTE = "not_absolute"
    NOT_A_DIRECTORY = "not_a_directory"
    OUTSIDE_ROOTS = "outside_roots"
    NOT_TEXT = "not_text"  # sessions store their folder as text; a non-UTF-8 path cannot be kept


_WORDING = {
    WorkspaceProblem.EMPTY: "{field} must not be empty",
    WorkspaceProblem.NOT_ABSOLUTE: "{field} must be an absolute path: {path}",
    WorkspaceProblem.NOT_A_DIRECTORY: "{field} is not an existing directory: {path}",
    WorkspaceProblem.OUTSIDE_ROOTS: "{field} is outside the allowed workspace roots: {path}",
    WorkspaceProblem.NOT_TEXT: "{field} is not valid UTF-8 text: {path}",
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

    The rules, in this order: not empty; ``~`` expanded when ``expand_user``; absolute (a relative
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
    candidate = Path(text).expanduser() if expand_user else Path(text)
    if not candidate.is_absolute():
        if relative_to is None:
            raise WorkspaceError(WorkspaceProblem.NOT_ABSOLUTE, text, field)
        candidate = relative_to / candidate
    resolved = candidate.resolve()
    if not resolved.is_dir():
        raise WorkspaceError(WorkspaceProblem.NOT_A_DIRECTORY, text, field)
    try:
        str(resolved).encode("utf-8")
    except UnicodeEncodeError:
        raise WorkspaceError(WorkspaceProblem.NOT_TEXT, text, field) from None
    if roots is not None and not any(_inside(resolved, Path(root).resolve()) for root in roots):
        raise WorkspaceError(WorkspaceProblem.OUTSIDE_ROOTS, text, field)
    return resolved if resolve else candidate


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
