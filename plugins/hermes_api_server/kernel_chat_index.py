"""The chat index (:mod:`hermes_api_server.chat_index`) kept in ``kernel.records``
(docs/reference/api-server.md#persistence).

Two namespaces:

- ``api.chat_index``: one record per (principal, history key), keyed by their digest. Its value
  lists the sessions recorded under the key, ``[session id, head, recorded]`` each, most recently
  recorded first, at most :data:`KEPT` of them. ``recorded`` lives in the value, so marking an
  entry as no longer a head leaves its place in the order alone.
- ``api.chat_heads``: one record per (principal, session), the keys that are the session's latest
  points, so the next turn end knows which entries to mark as no longer heads.

Both expire ``ttl_s`` after they were last written. Every change is a compare-and-set on the
record's version (an insert adds a key only where none is), so instances sharing a database never
lose each other's entries.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hermes_core import Claim, Expect

if TYPE_CHECKING:
    from hermes_core import RecordSpace, StoredRecord

#: How many sessions one key's record remembers (the lookup weighs fewer, see ``CANDIDATES``).
KEPT = 32
#: How often a conditional write is retried when another writer got in between.
_TRIES = 8

Entries = list[list[Any]]
Found = list[tuple[str, bool]]


def _digest(*parts: str) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


class KernelChatIndex:
    """History keys → sessions over two record spaces.

    :param keys: the ``api.chat_index`` space. :param heads: the ``api.chat_heads`` space.
    :param ttl_s: how long a record lives after its last write.
    """

    def __init__(self, keys: RecordSpace, heads: RecordSpace, ttl_s: float) -> None:
        self._keys = keys
        self._heads = heads
        self.ttl_s = ttl_s

    async def sessions(self, principal: str, key: str, ttl_s: float, limit: int) -> Found:
        """Return ``(session id, head)`` recorded under ``key`` within ``ttl_s``, newest first."""
        record = await self._keys.get(_digest(principal, key))
        if record is None:
            return []
        since = time.time() - ttl_s
        entries: Entries = record.value.get("s", [])
        return [(str(e[0]), bool(e[1])) for e in entries if float(e[2]) >= since][:limit]

    async def record(
        self,
        principal: str,
        session_id: str,
        heads: Sequence[str],
        earlier: Sequence[str],
        limit: int,
        *,
        first: bool = False,
    ) -> dict[str, Found]:
        """Make ``heads`` the session's latest points and add the missing ``earlier`` keys;
        with ``limit``, return what each head key names afterwards.

        :param first: nothing of the session was recorded before, so it has no heads record to
            read (a new stateless chat's first turn: three storage calls for its one key).
        """
        now = time.time()
        heads_key = _digest(principal, session_id)
        previous = None if first else await self._heads.get(heads_key)
        old = [k for k in (previous.value.get("heads", []) if previous else []) if k not in heads]
        named: dict[str, Found] = {}
        for key in heads:
            entries = await self._change(principal, key, lambda e: _put_head(e, session_id, now))
            named[key] = [(str(e[0]), bool(e[1])) for e in entries][:limit]
        for key in old:
            await self._change(principal, key, lambda e: _drop_head(e, session_id))
        for key in earlier:
            await self._change(principal, key, lambda e: _add_behind(e, session_id, now))
        await self._heads.put(heads_key, {"heads": list(heads)}, ttl_s=self.ttl_s)
        return named if limit else {}

    async def sweep(self, max_entries: int) -> None:
        """Drop expired records, then the least recently written keys past ``max_entries``."""
        await self._keys.sweep()
        await self._heads.sweep()
        await self._keys.evict(keep=max_entries)

    async def _change(self, principal: str, key: str, change: Callable[[Entries], Entries | None]) -> Entries:
        """Apply ``change`` to the key's entries (None: leave them) and return what is stored.

        A change that makes entries of nothing starts with an insert: it adds the key when
        absent (the usual case: most keys a turn end writes are new), and otherwise hands back
        the record as a read would, unchanged. One storage call per new key (two on a backend
        without ``insert_record``: a claim and its release).
        """
        rkey = _digest(principal, key)
        record: StoredRecord | None = None
        claimed = False
        start = change([])
        if start is not None:
            value = {"s": start[:KEPT]}
            claim = await self._insert(rkey, value)
            if claim.won:
                return value["s"]
            record, claimed = claim.record, True
        for _ in range(_TRIES):
            if not claimed:
                record = await self._keys.get(rkey)
            claimed = False
            entries: Entries = record.value.get("s", []) if record else []
            new = change([list(e) for e in entries])
            if new is None:
                return entries
            value = {"s": new[:KEPT]}
            if record is None:
                if (await self._insert(rkey, value)).won:
                    return value["s"]
                continue
            written = await self._keys.put(
                rkey, value, ttl_s=self.ttl_s, expect=Expect(version=record.version)
            )
            if written is not None:
                return value["s"]
        raise RuntimeError(f"the chat index entry for a key kept changing under {_TRIES} writes")

    async def _insert(self, rkey: str, value: dict[str, Entries]) -> Claim:
        """Add the key's record when absent: one storage call where the backend inserts in one
        step, else a claim let go at once (the same record either way)."""
        if self._keys.inserts:
            return await self._keys.insert(rkey, value, ttl_s=self.ttl_s)
        claim = await self._keys.claim(rkey, value, owner="api", ttl_s=self.ttl_s)
        if claim.won:
            released = await self._keys.release(rkey, expect=Expect(owner="api"), ttl_s=self.ttl_s)
            return Claim(True, released or claim.record)
        return claim


def _put_head(entries: Entries, session_id: str, now: float) -> Entries:
    return [[session_id, True, now], *(e for e in entries if e[0] != session_id)]


def _drop_head(entries: Entries, session_id: str) -> Entries | None:
    if not any(e[0] == session_id and e[1] for e in entries):
        return None
    return [[e[0], False, e[2]] if e[0] == session_id else e for e in entries]


def _add_behind(entries: Entries, session_id: str, now: float) -> Entries | None:
    if any(e[0] == session_id for e in entries):
        return None
    return [[session_id, False, now], *entries]
