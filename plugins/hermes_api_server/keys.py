"""API keys: the generated key file, principals, bearer checks and the bind guard
(docs/reference/api-server.md#api-keys-and-the-bind-guard, #authentication)."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

KEY_FILE = "api_server.key"


class KeyFileError(Exception):
    """The key file exists but may not be used."""


@dataclass(frozen=True, slots=True)
class KeyRing:
    """The keys this server accepts and where they came from."""

    keys: tuple[bytes, ...]
    source: str  # "configured" or "generated"
    path: Path | None = None

    @property
    def configured(self) -> bool:
        return self.source == "configured"

    def principal_for(self, header: str | None) -> str | None:
        """Return the principal of a valid ``Authorization`` header, else None.

        The token is compared with every key, with no early exit.

        :param header: the raw header value.
        :returns: ``principal:<32 hex>`` or None.
        """
        token = bearer_token(header)
        if token is None:
            return None
        raw = token.encode("utf-8")
        found: bytes | None = None
        for key in self.keys:
            if hmac.compare_digest(raw, key):
                found = key
        return principal_of(found) if found is not None else None


def bearer_token(header: str | None) -> str | None:
    """Return the token of ``Authorization: Bearer <token>`` (UTF-8 encodable), else None."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    if not token:
        return None
    try:
        token.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return token


def principal_of(key: bytes) -> str:
    """Return ``principal:`` + the first 32 hex digits of sha256(key)."""
    return "principal:" + hashlib.sha256(key).hexdigest()[:32]


def is_loopback(host: str) -> bool:
    """Tell whether ``host`` is ``localhost``, in 127.0.0.0/8 or ``::1``."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_or_create_key(data_dir: Path) -> tuple[str, Path]:
    """Return the generated key, creating ``api_server.key`` (0600) if missing.

    :param data_dir: the Hermes data directory.
    :returns: the key and the file's path.
    :raises KeyFileError: the file is not a regular file, is readable by others, or empty.
    """
    path = data_dir / KEY_FILE
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_existing(path), path
    key = "hk_" + secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(key + "\n")
    return key, path


def _read_existing(path: Path) -> str:
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        raise KeyFileError(f"{path} is not a regular file")
    if os.name == "posix" and info.st_mode & 0o077:
        raise KeyFileError(f"{path} is readable by group or others; run: chmod 600 {path}")
    key = path.read_text(encoding="utf-8").strip()
    if not key:
        raise KeyFileError(f"{path} is empty; delete it to generate a new key")
    return key
