"""Durable records: the backend contract (docs/reference/core.md#records, docs/plugin-hooks.md#records).

A record is a small JSON document under ``(namespace, key)``. Besides its value it carries:

- ``scope``, an indexed label for listing (the API server's principal, say);
- ``owner`` and ``epoch``, the holder of a claim and a number that grows each time the record is
  claimed, so a writer can fence its writes on "I still hold it" (``Expect(owner=, epoch=)``);
- ``version``, which grows on every change of value or owner, for compare-and-set;
- ``expires_at``, after which the record reads as absent and a sweep deletes it.

Storage backends implement :class:`RecordStore` once, next to their sessions (the memory backend
in dictionaries, SQLite in its database file, PostgreSQL on its pool); plugins use the kernel's
owner :class:`hermes_core.record_space.Records` (``kernel.records``), never the backend.
Timestamps come from the backend's clock (the database server's, for a shared one).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from hermes_core.errors import InvalidValue

#: ``[a-z0-9][a-z0-9_.-]*``, at most 64 characters: ``api.runs``, ``myplugin.jobs``.
NAMESPACE_RE = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,63}$")
MAX_KEY_CHARS = 512
MAX_SCOPE_CHARS = 512
MAX_OWNER_CHARS = 256
#: The largest value a record holds, as compact JSON text (UTF-8 bytes).
MAX_VALUE_BYTES = 1024 * 1024
#: The most records one listing returns.
MAX_LIST = 1000


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One record as storage holds it; ``data`` is the value as JSON text.

    :ivar namespace: the namespace.
    :ivar key: the key inside the namespace.
    :ivar data: the value, compact JSON text (``value`` parses it).
    :ivar scope: the listing label (``""`` when none).
    :ivar owner: the holder of the claim, or None when nobody holds it.
    :ivar epoch: how many times the record was claimed (1 for a record made by a claim; 0 for
        one only ever written with ``put``).
    :ivar version: 1 when made, plus one for every change of value or owner.
    :ivar created_at: when the record was first written (epoch seconds, the backend's clock).
    :ivar updated_at: the last write or touch.
    :ivar expires_at: when it stops existing, or None.
    """

    namespace: str
    key: str
    data: str
    scope: str
    owner: str | None
    epoch: int
    version: int
    created_at: float
    updated_at: float
    expires_at: float | None

    @property
    def value(self) -> Any:
        """The value, parsed from ``data``."""
        return json.loads(self.data)


@dataclass(frozen=True, slots=True)
class Expect:
    """What a conditional write requires of the record as it is; every given field must match.

    A record that is absent or expired matches no expectation.

    :ivar owner: the record's owner must be exactly this.
    :ivar epoch: its epoch must be this.
    :ivar version: its version must be this.
    :ivar held: True: it must have an owner; False: it must have none.
    """

    owner: str | None = None
    epoch: int | None = None
    version: int | None = None
    held: bool | None = None

    def matches(self, record: StoredRecord) -> bool:
        """Tell whether ``record`` (present and unexpired) meets the expectation."""
        return (
            (self.owner is None or record.owner == self.owner)
            and (self.epoch is None or record.epoch == self.epoch)
            and (self.version is None or record.version == self.version)
            and (self.held is None or (record.owner is not None) == self.held)
        )


@dataclass(frozen=True, slots=True)
class Claim:
    """The answer to a claim: ``won`` with our record, or the current holder's record."""

    won: bool
    record: StoredRecord


@dataclass(frozen=True, slots=True)
class RecordPage:
    """One page of a listing, newest ``updated_at`` first; ``next_cursor`` None on the last."""

    records: list[StoredRecord]
    next_cursor: str | None


@runtime_checkable
class RecordStore(Protocol):
    """The records part of a storage backend. Every call is one transaction.

    ``ttl_s`` is seconds from the backend's now; None means "never expires" except in
    :meth:`touch_record`, where it means "keep the expiry as it is". An expired record is absent
    for every call: reads do not return it, a claim or an insert replaces it.
    """

    async def get_record(self, namespace: str, key: str) -> StoredRecord | None:
        """Return the record, or None when absent or expired."""
        ...

    async def put_record(
        self,
        namespace: str,
        key: str,
        data: str,
        *,
        scope: str = "",
        ttl_s: float | None = None,
        expect: Expect | None = None,
    ) -> StoredRecord | None:
        """Write the value (insert or replace), keeping owner and epoch; bump the version.

        :param expect: when given, write only if the present record matches it.
        :returns: the record as written; None when ``expect`` did not match (nothing changed).
        """
        ...

    async def claim_record(
        self,
        namespace: str,
        key: str,
        data: str,
        *,
        owner: str,
        scope: str = "",
        ttl_s: float | None = None,
        stale_after_s: float | None = None,
    ) -> Claim:
        """Take the record for ``owner`` if it is absent, expired, or held by an owner who has
        not written or touched it for ``stale_after_s`` (None: a held record is never stale).

        A record nobody holds (released) is never taken: the caller gets it back with
        ``won=False``. Taking an existing record adds one to its epoch; a new record has epoch 1.
        """
        ...

    async def touch_record(
        self, namespace: str, key: str, *, expect: Expect | None = None, ttl_s: float | None = None
    ) -> StoredRecord | None:
        """Move ``updated_at`` to now (a holder saying it is alive), and the expiry to now +
        ``ttl_s`` when given; value, owner, epoch and version stay.

        :returns: the record; None when absent or ``expect`` did not match.
        """
        ...

    async def release_record(
        self,
        namespace: str,
        key: str,
        *,
        expect: Expect,
        data: str | None = None,
        ttl_s: float | None = None,
    ) -> StoredRecord | None:
        """Let go of a claim: the owner becomes None (the epoch stays), the value becomes
        ``data`` when given, the expiry now + ``ttl_s`` (None: never); bump the version.

        :returns: the record as written; None when absent or ``expect`` did not match.
        """
        ...

    async def delete_record(self, namespace: str, key: str, *, expect: Expect | None = None) -> bool:
        """Delete the record; tell whether one was deleted (False also when ``expect`` failed)."""
        ...

    async def list_records(
        self,
        namespace: str,
        *,
        scope: str | None = None,
        owner: str | None = None,
        held: bool | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> RecordPage:
        """List unexpired records, newest ``updated_at`` first (ties: greater key first).

        :param scope: only this scope. :param owner: only this owner.
        :param held: True: only held records; False: only unheld ones.
        :param limit: 1..``MAX_LIST``. :param cursor: ``next_cursor`` of the previous page.
        """
        ...

    async def count_records(self, namespace: str, *, scope: str | None = None) -> int:
        """Count the unexpired records (of one scope)."""
        ...

    async def evict_records(self, namespace: str, *, keep: int, scope: str | None = None) -> int:
        """Delete the unexpired records beyond the ``keep`` most recently updated (of one scope);
        return how many were deleted."""
        ...

    async def sweep_records(self, namespace: str | None = None) -> int:
        """Delete expired records (of one namespace, or all); return how many."""
        ...


#: What :meth:`RecordUpdates.update_records` applies: the present values as JSON text (None:
#: absent) in, the JSON texts to write in the same order out, or None to write nothing.
RecordChange = Callable[[list[str | None]], list[str] | None]


@runtime_checkable
class RecordUpdates(Protocol):
    """An optional part of a records backend: change several records of one namespace in one
    transaction, so a read-check-write across them is one step for every process that shares
    the backend (and one round trip). The budget ledger uses it where a backend offers it.
    """

    async def update_records(
        self, namespace: str, keys: Sequence[str], change: RecordChange
    ) -> list[StoredRecord] | None:
        """Read the unexpired values under ``keys`` (their ``data``) and write what ``change``
        makes of them, with no other write to those records in between.

        ``change`` runs once, inside the transaction (maybe on another thread): it must be quick,
        must not block or await, and must only compute. A record written here keeps its owner,
        epoch, scope and expiry and gets one more version; a new one is ``put_record``'s (epoch 0,
        version 1, no owner, no expiry, scope ``""``).

        :returns: the records as written; None when ``change`` returned None (nothing changed).
        """
        ...


@runtime_checkable
class RecordInserts(Protocol):
    """An optional part of a records backend: add a record only where none is, in one step (one
    round trip) instead of a claim let go at once. Callers that find a backend without it
    (:attr:`~hermes_core.record_space.RecordSpace.inserts`) make the claim and the release.
    """

    async def insert_record(
        self, namespace: str, key: str, data: str, *, scope: str = "", ttl_s: float | None = None
    ) -> Claim:
        """Write the record when it is absent or expired, as :meth:`RecordStore.claim_record`
        followed at once by :meth:`RecordStore.release_record` leaves it: no owner, epoch 1,
        version 2, ``created_at`` and ``updated_at`` now, expiring ``ttl_s`` from now.

        :returns: ``Claim(won=True, record=ours)``; or, when an unexpired record was there (held
            or not), ``Claim(won=False, record=it)`` with nothing changed.
        """
        ...


# -- checks every backend (and the kernel's owner) applies ---------------------------------------


def check_namespace(namespace: object) -> str:
    """Return ``namespace`` when it follows the grammar, else raise ``InvalidValue``."""
    if not isinstance(namespace, str) or not NAMESPACE_RE.match(namespace):
        raise InvalidValue(
            "namespace",
            message="a namespace is 1-64 characters of a-z 0-9 _ . - starting with a letter or digit",
        )
    return namespace


def check_text(name: str, value: object, limit: int, *, empty: bool = False) -> str:
    """Return ``value`` when it is a string of at most ``limit`` characters without NUL."""
    if not isinstance(value, str) or (not value and not empty) or len(value) > limit or "\0" in value:
        qualifier = "" if empty else "non-empty "
        raise InvalidValue(name, message=f"{name} must be a {qualifier}string of at most {limit} characters")
    return value


def check_ttl(name: str, value: object) -> float | None:
    """Return a ttl (positive seconds) or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or value > 1e10:
        raise InvalidValue(name, message=f"{name} must be a positive number of seconds")
    return float(value)


def check_limit(limit: object) -> int:
    """Return a listing limit in 1..``MAX_LIST``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST:
        raise InvalidValue("limit", message=f"limit must be an integer from 1 to {MAX_LIST}")
    return limit


#: ``json.dumps`` with these options would build an encoder per call (only the default options
#: have a shared one); every record write encodes its value, several on the way to a first token.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def dump_value(value: Any) -> str:
    """Return ``value`` as compact JSON text; ``InvalidValue`` if it is not JSON or too large."""
    try:
        text = _ENCODER.encode(value)
    except (TypeError, ValueError) as exc:
        raise InvalidValue("value", message=f"a record's value must be JSON: {exc}") from None
    if len(text) > MAX_VALUE_BYTES // 4 and len(text.encode("utf-8")) > MAX_VALUE_BYTES:
        raise InvalidValue("value", message=f"a record's value is at most {MAX_VALUE_BYTES} bytes of JSON")
    return text


def page_cursor(records: Sequence[StoredRecord], limit: int, more: bool) -> str | None:
    """Return the ``next_cursor`` after ``records`` (a page of at most ``limit``), if ``more``."""
    if not more or not records:
        return None
    last = records[min(limit, len(records)) - 1]
    return f"{last.updated_at!r}|{last.key}"


def read_cursor(cursor: str | None) -> tuple[float, str] | None:
    """Return ``(updated_at, key)`` of a listing cursor; ``InvalidValue`` when malformed."""
    if cursor is None:
        return None
    stamp, sep, key = cursor.partition("|") if isinstance(cursor, str) else ("", "", "")
    try:
        value = float(stamp)
    except ValueError:
        value = float("nan")
    if not sep or value != value:
        raise InvalidValue("cursor", message="not a cursor this listing returned")
    return value, key
