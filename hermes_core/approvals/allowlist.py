"""The persistent approval allowlist, ``<data dir>/approvals.json``
(docs/reference/core.md#approval-keys-and-memory).

The file is ``{"version": 1, "keys": [...]}``. It is replaced atomically (a temporary file in the
same directory, then ``os.replace``) with mode 0600, so a reader never sees half a file. An
unreadable or malformed file counts as empty and sets :attr:`Allowlist.warning`; a failed write
raises :class:`~hermes_core.errors.StorageError` and leaves memory and disk unchanged.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

from hermes_core.errors import StorageError

log = logging.getLogger("hermes.kernel")  # the start-up log the warning always went to

__all__ = ["ALLOWLIST_VERSION", "Allowlist"]

ALLOWLIST_VERSION = 1


def _read_keys(path: Path) -> list[str]:
    """Read the keys of an allowlist file; a missing file has none.

    :raises ValueError: when the file is unreadable or not a version-1 allowlist.
    """
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("version") != ALLOWLIST_VERSION:
        raise ValueError(f"expected a version {ALLOWLIST_VERSION} allowlist object")
    keys = data.get("keys")
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise ValueError("'keys' must be a list of strings")
    return list(dict.fromkeys(keys))


class Allowlist:
    """Approval keys the user chose to allow ``always``.

    :param path: the JSON file, or ``None`` for an in-memory list that is never written.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.warning: str | None = None
        self._lock = threading.Lock()
        self._keys: dict[str, None] = {}  # insertion-ordered set
        if path is not None:
            try:
                self._keys = dict.fromkeys(_read_keys(path))
            except ValueError as exc:
                self.warning = f"ignoring unreadable approvals file {path}: {exc}"

    @property
    def keys(self) -> tuple[str, ...]:
        """Return the allowed keys in the order they were added."""
        with self._lock:
            return tuple(self._keys)

    def contains(self, key: str) -> bool:
        """Tell whether ``key`` is allowed.

        :param key: an approval key (docs/reference/core.md#approval-keys-and-memory).
        :returns: ``True`` when it was added.
        """
        with self._lock:
            return key in self._keys

    def add(self, keys: Iterable[str]) -> None:
        """Add keys and write the file atomically (mode 0600).

        Keys another process wrote meanwhile are kept: the file is re-read and merged first.

        :param keys: approval keys to allow from now on.
        :raises StorageError: when the file cannot be written; nothing changes then.
        """
        new = [key for key in keys if isinstance(key, str) and key]
        if not new:
            return
        with self._lock:
            merged = dict(self._keys)
            on_disk: list[str] | None = None
            if self.path is not None:
                with contextlib.suppress(ValueError):  # an unreadable file gets overwritten
                    on_disk = _read_keys(self.path)
                    merged.update(dict.fromkeys(on_disk))
            merged.update(dict.fromkeys(new))
            if self.path is not None and (on_disk is None or not merged.keys() <= set(on_disk)):
                self._write(self.path, list(merged))
            self._keys = merged

    @staticmethod
    def _write(path: Path, keys: list[str]) -> None:
        payload = json.dumps({"version": ALLOWLIST_VERSION, "keys": keys}, indent=2) + "\n"
        tmp_name: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # mkstemp creates the file 0600, and os.replace keeps that mode on the target.
            fd, tmp_name = tempfile.mkstemp(prefix=".approvals.", suffix=".tmp", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp_name, 0o600)
            os.replace(tmp_name, path)
            tmp_name = None
        except OSError as exc:
            raise StorageError(f"cannot write approvals file {path}: {exc}") from exc
        finally:
            if tmp_name is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp_name)


def open_allowlist(data_dir: Path | None) -> Allowlist:
    """Open ``approvals.json`` in ``data_dir`` (in memory without one); an unreadable file is logged."""
    allowlist = Allowlist(data_dir / "approvals.json" if data_dir else None)
    if allowlist.warning:
        log.warning("%s", allowlist.warning)
    return allowlist
