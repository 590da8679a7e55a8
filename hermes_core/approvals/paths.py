"""Path facts for approvals: sensitive files and workspace confinement
(docs/reference/core.md#fixed-asks, #workspace).

Names are compared case-insensitively: on case-insensitive filesystems (macOS, Windows)
``.GIT/config`` is the repository's config, so the check fails closed. ``.envrc`` (direnv) is
not ``.env`` nor ``.env.*`` and is therefore not sensitive; ``.github`` is not ``.git``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["is_inside", "is_sensitive_path", "resolve_path"]

_SENSITIVE_DIRS = frozenset({".git", ".ssh"})
# The FIDO (_sk) variants are private key handles just like the plain ones.
_PRIVATE_KEYS = frozenset({"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"})
_KEY_SUFFIXES = (".pem", ".key")


def resolve_path(path: Path, workspace: Path | None = None) -> Path | None:
    """Return ``path`` made absolute (against ``workspace``) with ``..`` and symlinks resolved.

    :param path: an absolute path, or one relative to ``workspace``.
    :param workspace: the base for relative paths (the process cwd when ``None``).
    :returns: the resolved path, or ``None`` when it cannot be resolved (a symlink loop).
    """
    if not path.is_absolute() and workspace is not None:
        path = workspace / path
    try:
        return path.resolve(strict=False)
    except (OSError, RuntimeError):  # symlink loops raise RuntimeError before Python 3.13
        return None


def _is_sensitive_name(path: Path) -> bool:
    parts = [part.casefold() for part in path.parts]
    if any(part in _SENSITIVE_DIRS for part in parts):
        return True
    if not parts:
        return False
    name = parts[-1]
    if name == ".env" or name.startswith(".env."):
        return True
    return name in _PRIVATE_KEYS or name.endswith(_KEY_SUFFIXES)


def is_sensitive_path(path: Path) -> bool:
    """Tell whether ``path`` is sensitive: always asked about, never remembered.

    Sensitive means a ``.git`` or ``.ssh`` component, a file named ``.env`` or ``.env.*``, or a
    private key (``id_rsa``, ``id_dsa``, ``id_ecdsa``, ``id_ed25519``, their ``_sk`` variants,
    ``*.pem``, ``*.key``). Both the path as written and its resolved target are checked, so a
    symlink named ``notes.txt`` pointing at ``.env`` is sensitive too.

    :param path: the path to check (relative paths resolve against the process cwd).
    :returns: ``True`` when sensitive.
    """
    if _is_sensitive_name(path):
        return True
    resolved = resolve_path(path)
    return resolved is not None and _is_sensitive_name(resolved)


def is_inside(path: Path, workspace: Path) -> bool:
    """Tell whether ``path`` lies inside ``workspace`` once ``..`` and symlinks are resolved.

    The workspace itself counts as inside. A path that cannot be resolved (a symlink loop) is
    treated as outside, which makes it ask rather than run.

    :param path: an absolute path, or one relative to ``workspace``.
    :param workspace: the session's workspace directory.
    :returns: ``True`` when inside.
    """
    resolved = resolve_path(path, workspace)
    root = resolve_path(workspace)
    if resolved is None or root is None:
        return False
    return resolved.is_relative_to(root)
