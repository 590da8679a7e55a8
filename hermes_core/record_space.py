"""``kernel.records``: the kernel's owner of durable records (docs/reference/core.md#records).

Plugins keep their small durable state here (the API server's stored responses, runs,
idempotency keys, console sign-ins) instead of in files or pools of their own: whatever storage
backend the kernel runs on holds it, shared by every instance that shares the backend. A
namespace is a plugin's own (``api.runs``); :meth:`Records.space` hands out a
:class:`RecordSpace` bound to one. Values are JSON; arguments are checked here, so a bad one is
an ``InvalidValue`` naming it and never reaches the backend.
"""

from __future__ import annotations

import enum
import json
from typing import TYPE_CHECKING, Any

from hermes_core.errors import StorageUnsupported
from hermes_core.lease_owner import holder_is_gone, make_owner
from hermes_core.record_store import (
    MAX_KEY_CHARS,
    MAX_OWNER_CHARS,
    MAX_SCOPE_CHARS,
    Claim,
    Expect,
    RecordInserts,
    RecordPage,
    RecordStore,
    RecordUpdates,
    StoredRecord,
    check_limit,
    check_namespace,
    check_text,
    check_ttl,
    dump_value,
    read_cursor,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from hermes_core.kernel import Kernel

RECORD_METHODS = (
    "get_record",
    "put_record",
    "claim_record",
    "touch_record",
    "release_record",
    "delete_record",
    "list_records",
    "count_records",
    "evict_records",
    "sweep_records",
)


class _Keep(enum.Enum):
    KEEP = "keep"


#: ``RecordSpace.release(value=KEEP)``: leave the value as it is.
KEEP = _Keep.KEEP


def missing_record_methods(storage: object) -> list[str]:
    """Return the :class:`RecordStore` methods ``storage`` lacks (empty: it has them all)."""
    return [name for name in RECORD_METHODS if not callable(getattr(storage, name, None))]


class Records:
    """Durable records on the kernel's storage backend (``kernel.records``).

    :param kernel: the kernel whose storage holds them.
    """

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        #: The storage object last found to keep records (a backend never loses methods): every
        #: records call asks :meth:`store`, and the check is a dozen lookups.
        self._checked: object | None = None

    @property
    def available(self) -> bool:
        """Whether the running storage backend keeps records (every first-party one does)."""
        return not missing_record_methods(self._kernel.storage)

    @property
    def shared(self) -> bool:
        """Whether other processes may write the same records: the backend lives on a database
        server (``StorageSpec.kind = "server"``) that other instances can share."""
        backend = self._kernel.settings.storage.backend
        spec = self._kernel.registry.storage.get(backend)
        return spec is not None and spec.kind == "server"

    def store(self) -> RecordStore:
        """Return the backend's records part.

        :raises StorageUnsupported: the backend does not implement records (naming what it lacks).
        :raises StorageError: the kernel is not running.
        """
        storage = self._kernel.storage
        if storage is self._checked:
            return storage  # type: ignore[return-value]
        missing = missing_record_methods(storage)
        if missing:
            backend = self._kernel.settings.storage.backend
            raise StorageUnsupported(
                f"storage backend {backend!r} does not keep records (it lacks {', '.join(missing)}); "
                "see docs/plugin-hooks.md#records"
            )
        self._checked = storage
        return storage  # type: ignore[return-value]

    def space(self, namespace: str) -> RecordSpace:
        """Return the records of one namespace.

        :param namespace: 1-64 characters of ``a-z 0-9 _ . -``; by convention the plugin's name
            first (``api.runs``).
        :raises InvalidValue: for a namespace outside that grammar.
        """
        return RecordSpace(self, check_namespace(namespace))

    def new_owner(self) -> str:
        """Return a fresh owner string naming this process (``<host>:<pid>:<start>:<pidns>:<random>``,
        as the kernel's session leases): a claim held under it can be taken at once by
        ``claim(..., take_gone=True)`` once this process is dead (:meth:`holder_gone`)."""
        return make_owner()

    def holder_gone(self, owner: str) -> bool:
        """Tell whether ``owner`` (a :meth:`new_owner` string) is a process on this host that no
        longer runs; any doubt (another host, another pid namespace, another form) says no."""
        return holder_is_gone(owner)

    async def sweep(self) -> int:
        """Delete every expired record of every namespace; return how many."""
        return await self.store().sweep_records(None)


def _key(key: object) -> str:
    return check_text("key", key, MAX_KEY_CHARS)


def _scope(scope: object) -> str:
    return check_text("scope", scope, MAX_SCOPE_CHARS, empty=True)


def _owner(owner: object) -> str:
    return check_text("owner", owner, MAX_OWNER_CHARS)


def _expect(expect: object) -> Expect | None:
    if expect is not None and not isinstance(expect, Expect):
        from hermes_core.errors import InvalidValue

        raise InvalidValue("expect", message="expect must be an Expect or None")
    return expect


class RecordSpace:
    """The records of one namespace (see :class:`~hermes_core.record_store.RecordStore` for the
    exact semantics of each call; here values are Python JSON values, not text)."""

    def __init__(self, records: Records, namespace: str) -> None:
        self._records = records
        self.namespace = namespace

    async def get(self, key: str) -> StoredRecord | None:
        """Return the record under ``key``, or None (absent or expired)."""
        return await self._records.store().get_record(self.namespace, _key(key))

    async def put(
        self,
        key: str,
        value: Any,
        *,
        scope: str = "",
        ttl_s: float | None = None,
        expect: Expect | None = None,
    ) -> StoredRecord | None:
        """Write ``value`` (insert or replace); with ``expect`` only if the record matches.

        :returns: the record written, or None when ``expect`` did not match.
        """
        data = dump_value(value)
        return await self._records.store().put_record(
            self.namespace,
            _key(key),
            data,
            scope=_scope(scope),
            ttl_s=check_ttl("ttl_s", ttl_s),
            expect=_expect(expect),
        )

    async def claim(
        self,
        key: str,
        value: Any,
        *,
        owner: str,
        scope: str = "",
        ttl_s: float | None = None,
        stale_after_s: float | None = None,
        take_gone: bool = False,
    ) -> Claim:
        """Take ``key`` for ``owner`` if it is absent, expired or held but stale.

        :param take_gone: also take it at once when its holder is a dead process of this host
            (:meth:`Records.holder_gone`): the dead holder's record is deleted (fenced on its
            owner and epoch, so only one claimant gets there) and claimed afresh (epoch 1).
        :returns: ``Claim(won=True, record=ours)`` or ``Claim(won=False, record=theirs)``.
        """
        data = dump_value(value)
        store = self._records.store()
        name, owner, scope = _key(key), _owner(owner), _scope(scope)
        ttl, stale = check_ttl("ttl_s", ttl_s), check_ttl("stale_after_s", stale_after_s)
        claim = await store.claim_record(
            self.namespace, name, data, owner=owner, scope=scope, ttl_s=ttl, stale_after_s=stale
        )
        theirs = claim.record.owner
        if claim.won or not take_gone or theirs is None or not holder_is_gone(theirs):
            return claim
        await store.delete_record(self.namespace, name, expect=Expect(owner=theirs, epoch=claim.record.epoch))
        return await store.claim_record(
            self.namespace, name, data, owner=owner, scope=scope, ttl_s=ttl, stale_after_s=stale
        )

    @property
    def inserts(self) -> bool:
        """Whether the backend adds an absent record in one step (:meth:`insert`)."""
        return callable(getattr(self._records.store(), "insert_record", None))

    async def insert(self, key: str, value: Any, *, scope: str = "", ttl_s: float | None = None) -> Claim:
        """Add ``value`` under ``key`` unless an unexpired record is there: one call of the
        backend (:meth:`RecordInserts.insert_record`), leaving what a claim released at once
        would (no owner, epoch 1, version 2).

        :returns: ``Claim(won=True, record=ours)``, or the record found with ``won=False``.
        :raises StorageUnsupported: the backend does not offer it (see :attr:`inserts`).
        """
        data = dump_value(value)
        store: RecordInserts = self._records.store()  # type: ignore[assignment]
        if not callable(getattr(store, "insert_record", None)):
            raise StorageUnsupported("this storage backend does not insert a record in one step")
        return await store.insert_record(
            self.namespace, _key(key), data, scope=_scope(scope), ttl_s=check_ttl("ttl_s", ttl_s)
        )

    @property
    def updates(self) -> bool:
        """Whether the backend changes several records in one step (:meth:`update`)."""
        return callable(getattr(self._records.store(), "update_records", None))

    async def update(
        self, keys: Sequence[str], change: Callable[[list[Any]], list[Any] | None]
    ) -> list[StoredRecord] | None:
        """Write what ``change`` makes of the values under ``keys`` (None: absent), in one
        transaction of the backend (:meth:`RecordUpdates.update_records`): ``change`` must only
        compute (it may run on the backend's thread), and returns one value per key, or None to
        write nothing.

        :returns: the records written; None when ``change`` returned None.
        :raises StorageUnsupported: the backend does not offer it (see :attr:`updates`).
        :raises InvalidValue: a key, or a value ``change`` returned, is not one a record holds.
        """
        store: RecordUpdates = self._records.store()  # type: ignore[assignment]
        if not callable(getattr(store, "update_records", None)):
            raise StorageUnsupported("this storage backend does not change several records at once")
        names = [_key(key) for key in keys]

        def as_text(texts: list[str | None]) -> list[str] | None:
            made = change([None if text is None else json.loads(text) for text in texts])
            if made is None:
                return None
            if len(made) != len(names):
                from hermes_core.errors import InvalidValue

                raise InvalidValue("change", message="change must return one value per key")
            return [dump_value(value) for value in made]

        return await store.update_records(self.namespace, names, as_text)

    async def touch(
        self, key: str, *, expect: Expect | None = None, ttl_s: float | None = None
    ) -> StoredRecord | None:
        """Mark the record alive now (and expiring ``ttl_s`` from now, when given)."""
        return await self._records.store().touch_record(
            self.namespace, _key(key), expect=_expect(expect), ttl_s=check_ttl("ttl_s", ttl_s)
        )

    async def release(
        self, key: str, *, expect: Expect, value: Any = KEEP, ttl_s: float | None = None
    ) -> StoredRecord | None:
        """Let go of a claim (owner None), optionally writing a final value.

        :param value: the new value; the default :data:`KEEP` leaves it as it is.
        :param ttl_s: the released record expires this long from now (None: never).
        """
        checked = _expect(expect)
        if checked is None:
            from hermes_core.errors import InvalidValue

            raise InvalidValue("expect", message="release needs an Expect (at least the owner)")
        data = None if value is KEEP else dump_value(value)
        return await self._records.store().release_record(
            self.namespace, _key(key), expect=checked, data=data, ttl_s=check_ttl("ttl_s", ttl_s)
        )

    async def delete(self, key: str, *, expect: Expect | None = None) -> bool:
        """Delete the record; tell whether it was there (and matched ``expect``)."""
        return await self._records.store().delete_record(self.namespace, _key(key), expect=_expect(expect))

    async def list(
        self,
        *,
        scope: str | None = None,
        owner: str | None = None,
        held: bool | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> RecordPage:
        """List records, most recently updated first (keyset paging with ``cursor``)."""
        read_cursor(cursor)
        return await self._records.store().list_records(
            self.namespace,
            scope=None if scope is None else _scope(scope),
            owner=None if owner is None else _owner(owner),
            held=held,
            limit=check_limit(limit),
            cursor=cursor,
        )

    async def count(self, *, scope: str | None = None) -> int:
        """Count the unexpired records (of one scope)."""
        return await self._records.store().count_records(
            self.namespace, scope=None if scope is None else _scope(scope)
        )

    async def evict(self, *, keep: int, scope: str | None = None) -> int:
        """Keep only the ``keep`` most recently updated records (of one scope); return how many
        were deleted."""
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            from hermes_core.errors import InvalidValue

            raise InvalidValue("keep", message="keep must be a non-negative integer")
        return await self._records.store().evict_records(
            self.namespace, keep=keep, scope=None if scope is None else _scope(scope)
        )

    async def sweep(self) -> int:
        """Delete this namespace's expired records; return how many."""
        return await self._records.store().sweep_records(self.namespace)
