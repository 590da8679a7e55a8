"""Scoped, tenant-bound access keys kept in the kernel's records (docs/reference/api-server.md#scoped-keys).

A key is ``{id, hash, tenant, scopes, expires_at}`` in the ``api.keys`` namespace of
``kernel.records``: with a storage backend on a database server every instance that shares it
honours the same keys, and a revocation (the record deleted) at once. Only the SHA-256 of the
secret is stored; the secret itself (``hks_<id>_<random>``) is shown once, when the key is made.

Scopes: ``observe`` (read), ``control`` (start, steer, stop, delete), ``approve`` (answer
approvals), ``admin`` (every scope, and managing keys). The transports map each of their routes
and methods to one scope in :mod:`hermes_core.access_scopes`.

Whatever a caller owns (sessions, runs, responses, conversations) is filed under its
:attr:`Principal.owner`: ``tenant:<name>`` for a stored key, so every key of a tenant sees the
tenant's records and nothing else.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_core.errors import InvalidValue

if TYPE_CHECKING:
    from hermes_core.record_space import Records, RecordSpace
    from hermes_core.record_store import StoredRecord

SCOPES: tuple[str, ...] = ("observe", "control", "approve", "admin")
ACCESS_SCOPES = SCOPES
ADMIN = "admin"
DEFAULT_TENANT = "default"
KEYS_NAMESPACE = "api.keys"
SECRET_PREFIX = "hks_"
#: A tenant name: what a namespace allows, so it can label records.
TENANT_RE = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,63}$")
_ID_RE = re.compile(r"^[0-9a-f]{12}$")
#: How long a verified key is trusted without reading its record again (revocation delay bound).
CACHE_S = 0.5
_CACHE_MAX = 4096
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller of one request or connection.

    :ivar key_id: the key's id (``principal:<32 hex>`` for a configured or generated key).
    :ivar tenant: the tenant the key belongs to (``default`` for configured or generated keys).
    :ivar scopes: what it may do; ``admin`` implies every other scope.
    :ivar owner: what its sessions, runs and responses are filed under.
    """

    key_id: str
    tenant: str
    scopes: frozenset[str]
    owner: str

    def allows(self, scope: str) -> bool:
        """Tell whether the key holds ``scope`` (``admin`` holds them all)."""
        return scope in self.scopes or ADMIN in self.scopes

    @property
    def operator(self) -> bool:
        """An admin of the ``default`` tenant: manages the keys of every tenant."""
        return ADMIN in self.scopes and self.tenant == DEFAULT_TENANT


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """A stored key as listed: everything but the hash."""

    id: str
    tenant: str
    scopes: tuple[str, ...]
    created_at: float
    expires_at: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tenant": self.tenant,
            "scopes": list(self.scopes),
            "created_at": self.created_at,
            "expires_at": self.expires_at,
        }


def owner_of_tenant(tenant: str) -> str:
    """Return the owner label of a tenant's records."""
    return "tenant:" + tenant


def legacy_principal(owner: str) -> Principal:
    """Return the principal of a configured or generated key: ``admin`` of ``default``.

    :param owner: ``principal:<32 hex>`` of the key, as its records were always filed.
    """
    return Principal(owner, DEFAULT_TENANT, frozenset({ADMIN}), owner)


def parse_scopes(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Return the scopes of ``observe,approve`` (or a list), in canonical order.

    :raises InvalidValue: an empty list or an unknown scope.
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    names = {str(item).strip() for item in items if str(item).strip()}
    unknown = sorted(names - set(SCOPES))
    if not names or unknown:
        raise InvalidValue(
            "scopes",
            message=f"scopes must be a non-empty subset of {', '.join(SCOPES)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else ""),
        )
    return tuple(s for s in SCOPES if s in names)


def check_tenant(tenant: object) -> str:
    """Return a valid tenant name; raise ``InvalidValue`` otherwise."""
    if not isinstance(tenant, str) or not TENANT_RE.match(tenant):
        raise InvalidValue(
            "tenant", message="a tenant is 1-64 characters of a-z 0-9 _ . - starting with a letter or digit"
        )
    return tenant


def parse_duration(text: str) -> float:
    """Return the seconds of ``30d``, ``12h``, ``45m``, ``90s``, ``2w`` (a bare number: seconds).

    :raises InvalidValue: anything else, or not positive.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text or "")
    seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"] if match else 0.0
    if not match or seconds <= 0 or seconds > 1e10:
        raise InvalidValue("expires", message="a duration is a positive number with s, m, h, d or w (30d)")
    return seconds


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def split_secret(token: str) -> str | None:
    """Return the key id of a stored key's secret (``hks_<12 hex>_…``), else None."""
    if len(token) < 20 or not token.startswith(SECRET_PREFIX) or token[16] != "_":
        return None
    key_id = token[4:16]
    return key_id if _ID_RE.match(key_id) else None


class AccessKeys:
    """The stored keys (``api.keys`` in ``kernel.records``).

    :param records: the kernel's records owner.
    :param cache_s: how long a verified key is trusted before its record is read again.
    """

    def __init__(self, records: Records, cache_s: float = CACHE_S) -> None:
        self._space: RecordSpace = records.space(KEYS_NAMESPACE)
        self._cache_s = cache_s
        #: key id -> (principal, secret digest, monotonic time it was read)
        self._cache: dict[str, tuple[Principal, str, float]] = {}

    async def create(
        self, tenant: str, scopes: str | list[str] | tuple[str, ...], ttl_s: float | None = None
    ) -> tuple[str, KeyInfo]:
        """Make a key; return its secret (shown once) and what is stored.

        :raises InvalidValue: a bad tenant, scope list or lifetime.
        """
        tenant = check_tenant(tenant)
        wanted = parse_scopes(scopes)
        if ttl_s is not None and not 0 < ttl_s <= 1e10:
            raise InvalidValue("expires", message="a key's lifetime must be positive")
        key_id = secrets.token_hex(6)
        secret = f"{SECRET_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        now = time.time()
        expires_at = now + ttl_s if ttl_s is not None else None
        value = {
            "hash": _digest(secret),
            "tenant": tenant,
            "scopes": list(wanted),
            "created_at": now,
            "expires_at": expires_at,
        }
        await self._space.put(key_id, value, scope=tenant, ttl_s=ttl_s)
        return secret, KeyInfo(key_id, tenant, wanted, now, expires_at)

    async def list(self, tenant: str | None = None) -> list[KeyInfo]:
        """Return the live keys (of one tenant), newest first; never a secret or a hash."""
        out: list[KeyInfo] = []
        cursor: str | None = None
        while True:
            page = await self._space.list(scope=tenant, limit=1000, cursor=cursor)
            out.extend(info for info in (_info(r) for r in page.records) if info is not None)
            cursor = page.next_cursor
            if cursor is None:
                return sorted(out, key=lambda k: k.created_at, reverse=True)

    async def get(self, key_id: str) -> KeyInfo | None:
        """Return one live key, else None."""
        if not _ID_RE.match(key_id):
            return None
        record = await self._space.get(key_id)
        return _info(record) if record is not None else None

    async def revoke(self, key_id: str, tenant: str | None = None) -> bool:
        """Delete a key (of ``tenant`` when given); tell whether it existed.

        Every instance sharing the records refuses it within :data:`CACHE_S`.
        """
        self._cache.pop(key_id, None)
        if tenant is not None:
            found = await self.get(key_id)
            if found is None or found.tenant != tenant:
                return False
        return _ID_RE.match(key_id) is not None and await self._space.delete(key_id)

    async def authenticate(self, token: str) -> Principal | None:
        """Return the principal of a stored key's secret, else None (unknown, revoked, expired)."""
        key_id = split_secret(token)
        if key_id is None:
            return None
        digest = _digest(token)
        now = time.monotonic()
        cached = self._cache.get(key_id)
        if cached is not None and now - cached[2] < self._cache_s:
            principal, known, _ = cached
            return principal if hmac.compare_digest(known, digest) else None
        record = await self._space.get(key_id)
        if record is None:
            self._cache.pop(key_id, None)
            return None
        value = record.value
        stored = str(value.get("hash", ""))
        info = _info(record)
        if info is None or not hmac.compare_digest(stored, digest):
            return None
        principal = Principal(info.id, info.tenant, frozenset(info.scopes), owner_of_tenant(info.tenant))
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[key_id] = (principal, stored, now)
        return principal

    async def principal_of_id(self, key_id: str) -> Principal | None:
        """Return the principal of a live key by id (a console sign-in made with it), else None."""
        now = time.monotonic()
        cached = self._cache.get(key_id)
        if cached is not None and now - cached[2] < self._cache_s:
            return cached[0]
        info = await self.get(key_id)
        if info is None:
            self._cache.pop(key_id, None)
            return None
        return Principal(info.id, info.tenant, frozenset(info.scopes), owner_of_tenant(info.tenant))


def _info(record: StoredRecord) -> KeyInfo | None:
    value = record.value
    if not isinstance(value, dict):
        return None
    expires_at = value.get("expires_at")
    if isinstance(expires_at, int | float) and expires_at <= time.time():
        return None
    try:
        scopes = parse_scopes(list(value.get("scopes") or []))
        tenant = check_tenant(value.get("tenant"))
    except InvalidValue:
        return None
    created = value.get("created_at")
    return KeyInfo(
        record.key,
        tenant,
        scopes,
        float(created) if isinstance(created, int | float) else record.created_at,
        float(expires_at) if isinstance(expires_at, int | float) else None,
    )
