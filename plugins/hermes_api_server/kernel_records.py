"""The API server's records kept by the kernel (docs/reference/api-server.md#persistence).

:class:`KernelApiRecords` implements :class:`~hermes_api_server.records.ApiRecords` over
``kernel.records``: whatever storage backend the kernel runs on (memory, SQLite, PostgreSQL or a
third party's) keeps the stored responses, conversation names, runs, idempotency keys and console
sign-ins, in its own database and through its own pool or writer. The plugin opens no file and no
pool of its own and never looks at the backend's name.

Namespaces (all ``api.*``):

- ``api.responses``: key the response id, scope the principal; least recently used evicted past
  ``responses_max_stored`` (reading one touches it);
- ``api.conversations``: key a digest of (principal, name), value the response id it points at;
- ``api.responses_owner``: the liveness lease of each running background response
  (:mod:`hermes_api_server.response_lease`, swept by :mod:`hermes_api_server.response_sweep`);
- ``api.runs``: key the run id, scope the principal, value ``{status, terminal}``; an ended run
  expires after the run-status retention;
- ``api.runs_open``: one marker per run not ended yet (so a restart finds them without a scan);
- ``api.run_keys``, ``api.turn_keys``: idempotency keys, by a digest of their parts;
- ``api.console``: console sign-ins by the SHA-256 of their cookie, expiring with the sign-in;
- ``api.chat_index``, ``api.chat_heads``: the chat index (:mod:`hermes_api_server.kernel_chat_index`).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes_api_server.kernel_chat_index import KernelChatIndex
from hermes_core import Expect

if TYPE_CHECKING:
    from hermes_core import Kernel, RecordSpace

#: How often a conditional run write is retried when another writer got in between.
_CAS_TRIES = 8


def _digest(*parts: str) -> str:
    """A fixed-length key for a tuple of free-form parts (names may be long)."""
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


class KernelApiRecords:
    """The API server's records in ``kernel.records``.

    :param kernel: the running kernel whose storage keeps them.
    :param max_responses: stored responses kept (least recently used dropped first).
    :param run_retention_s: how long an ended run's status (and a run idempotency key) is kept.
    :param chat_ttl_s: how long a chat index key lives after it was last recorded.
    :param shared_bus: a shared run bus joins this instance to others (see :attr:`shared`).
    """

    def __init__(
        self,
        kernel: Kernel,
        max_responses: int,
        run_retention_s: float,
        chat_ttl_s: float = 30 * 86400,
        *,
        shared_bus: bool = False,
    ) -> None:
        records = kernel.records
        self._records = records
        #: True when other live instances may write these records: the backend lives on a
        #: database server they share, or a shared run bus joins several instances, which on one
        #: host may share one SQLite file (docs/deploy.md). Only the bus then knows whether a
        #: stored run's owner is alive.
        self.shared = records.shared or shared_bus
        self.max_responses = max_responses
        # A retention of 0 keeps an ended run only until the next sweep.
        self.run_retention_s = max(run_retention_s, 0.001)
        self._responses = records.space("api.responses")
        self._names = records.space("api.conversations")
        self._runs = records.space("api.runs")
        self._open_runs = records.space("api.runs_open")
        self._run_keys = records.space("api.run_keys")
        self._turn_keys = records.space("api.turn_keys")
        self._console = records.space("api.console")
        self._chat_keys = records.space("api.chat_index")
        self._chat_heads = records.space("api.chat_heads")
        #: Background responses' liveness leases (written by ``response_lease``; swept here).
        self._response_owners = records.space("api.responses_owner")
        self._chats = KernelChatIndex(self._chat_keys, self._chat_heads, chat_ttl_s)
        # Evicting walks the namespace's index: done every ``_evict_every`` stores (about 1% of
        # the bound), so the bound may be passed by that much in between.
        self._evict_every = max(1, min(100, max_responses // 100))
        self._stores = 0
        #: claims this process holds: (principal, scope, key) -> (owner token, ttl_s, fingerprint)
        self._claims: dict[tuple[str, str, str], tuple[str, float, str]] = {}

    def _spaces(self) -> tuple[RecordSpace, ...]:
        return (
            self._responses,
            self._names,
            self._runs,
            self._open_runs,
            self._run_keys,
            self._turn_keys,
            self._chat_keys,
            self._chat_heads,
            self._console,
            self._response_owners,
        )

    async def open(self) -> None:
        """Check that the backend keeps records (``StorageUnsupported`` naming what it lacks)."""
        self._records.store()

    async def close(self) -> None:
        """Nothing to close: the kernel owns the storage."""

    # -- responses ----------------------------------------------------------------------------
    async def put_response(
        self,
        response_id: str,
        principal: str,
        session_id: str,
        through_row_id: int | None,
        instructions: str | None,
        obj: dict[str, Any],
        conversation: str | None,
        input_items: list[dict[str, Any]] | None = None,
    ) -> None:
        """Store (or replace) a response and point its conversation name at it; past
        ``max_responses`` the least recently used go (checked every 1% of the bound)."""
        value = {
            "session_id": session_id,
            "through_row_id": through_row_id,
            "instructions": instructions,
            "object": obj,
            "input": input_items,
            "conversation": conversation,
        }
        if conversation is None:
            # A rewrite (a cancel, say) keeps the name the response was stored under.
            old = await self._responses.get(response_id)
            if old is not None and old.scope == principal:
                value["conversation"] = old.value.get("conversation")
        await self._responses.put(response_id, value, scope=principal)
        if conversation:
            key = _digest(principal, conversation)
            await self._names.put(key, {"response_id": response_id}, scope=principal)
        self._stores += 1
        if self._stores % self._evict_every == 0:
            await self._responses.evict(keep=self.max_responses)

    async def get_response(self, principal: str, response_id: str) -> dict[str, Any] | None:
        """Return ``{session_id, through_row_id, instructions, object, input}`` and refresh its
        LRU slot."""
        record = await self._responses.get(response_id)
        if record is None or record.scope != principal:
            return None
        await self._responses.touch(response_id)
        value = record.value
        return {
            "session_id": value["session_id"],
            "through_row_id": value.get("through_row_id"),
            "instructions": value.get("instructions"),
            "object": value["object"],
            "input": value.get("input"),
        }

    async def delete_response(self, principal: str, response_id: str) -> bool:
        """Delete a response and the name pointing at it."""
        record = await self._responses.get(response_id)
        if record is None or record.scope != principal:
            return False
        deleted = await self._responses.delete(response_id, expect=Expect(version=record.version))
        name = record.value.get("conversation")
        if name:
            key = _digest(principal, name)
            pointer = await self._names.get(key)
            if pointer is not None and pointer.value.get("response_id") == response_id:
                await self._names.delete(key, expect=Expect(version=pointer.version))
        return deleted

    async def conversation(self, principal: str, name: str) -> str | None:
        """Return the response id a conversation name points at."""
        record = await self._names.get(_digest(principal, name))
        if record is None or record.scope != principal:
            return None
        return str(record.value["response_id"])

    # -- runs ---------------------------------------------------------------------------------
    async def put_run(self, run_id: str, principal: str, status: dict[str, Any], terminal: bool) -> bool:
        """Write a run's status unless it already ended: the first stored end stays (a run ends
        once) and a later status, ending or not, is refused; return whether it was written. An
        ended run's status expires after the run-status retention. A running run costs one read
        and one write per status (plus its open marker the first time)."""
        value = {"status": status, "terminal": terminal}
        ttl = self.run_retention_s if terminal else None
        written = False
        for _ in range(_CAS_TRIES):
            old = await self._runs.get(run_id)
            if old is None:
                if not terminal:  # before the run, so a run never exists without its marker
                    await self._open_runs.put(run_id, {}, scope=principal)
                # Insert only if still absent: a claim, let go at once.
                claim = await self._runs.claim(run_id, value, owner="api", scope=principal, ttl_s=ttl)
                if claim.won:
                    await self._runs.release(run_id, expect=Expect(owner="api"), ttl_s=ttl)
                    written = True
                    break
                continue
            if old.value.get("terminal"):
                return False  # the first end stays
            stored = await self._runs.put(
                run_id, value, scope=principal, ttl_s=ttl, expect=Expect(version=old.version)
            )
            if stored is not None:
                written = True
                break
        if terminal and written:
            await self._open_runs.delete(run_id)
        return written

    async def get_run(self, run_id: str) -> tuple[str, dict[str, Any]] | None:
        """Return (principal, status) of a stored run."""
        record = await self._runs.get(run_id)
        return None if record is None else (record.scope, record.value["status"])

    async def non_terminal_runs(self) -> list[tuple[str, str, dict[str, Any]]]:
        """Return (run_id, principal, status) of runs left unsettled."""
        found: list[tuple[str, str, dict[str, Any]]] = []
        cursor: str | None = None
        while True:
            page = await self._open_runs.list(limit=1000, cursor=cursor)
            for marker in page.records:
                record = await self._runs.get(marker.key)
                if record is None or record.value.get("terminal"):
                    await self._open_runs.delete(marker.key, expect=Expect(version=marker.version))
                    continue
                found.append((marker.key, record.scope, record.value["status"]))
            if page.next_cursor is None:
                return found
            cursor = page.next_cursor

    async def runs_of(self, principal: str, limit: int) -> list[dict[str, Any]]:
        """Return the stored statuses of one principal's runs, most recently updated first."""
        page = await self._runs.list(scope=principal, limit=max(1, min(limit, 1000)))
        return [record.value["status"] for record in page.records]

    async def run_key(self, principal: str, key: str) -> tuple[str, str] | None:
        """Return (fingerprint, run_id) recorded for an idempotency key."""
        record = await self._run_keys.get(_digest(principal, key))
        if record is None:
            return None
        return (str(record.value["fingerprint"]), str(record.value["run_id"]))

    async def put_run_key(self, principal: str, key: str, fp: str, run_id: str) -> None:
        """Record an idempotency key (kept as long as run statuses)."""
        await self._run_keys.put(
            _digest(principal, key),
            {"fingerprint": fp, "run_id": run_id},
            scope=principal,
            ttl_s=self.run_retention_s,
        )

    async def sweep(self, retention_s: float, key_ttl_s: float) -> None:
        """Delete what expired (ended runs and run keys past ``retention_s``, results past
        ``key_ttl_s``, ended console sign-ins); the expiries were set when each was written."""
        del retention_s, key_ttl_s
        for space in self._spaces():
            await space.sweep()

    async def count_runs(self) -> int:
        """Return how many run statuses are stored."""
        return await self._runs.count()

    # -- console sessions ----------------------------------------------------------------------
    async def open_console_session(
        self, digest: str, principal: str, csrf: str, expires_at: float, max_sessions: int
    ) -> None:
        """Store a sign-in; past ``max_sessions`` live ones, the oldest are dropped."""
        ttl = expires_at - time.time()
        if ttl <= 0:
            return
        value = {"principal": principal, "csrf": csrf, "expires_at": expires_at}
        await self._console.put(digest, value, scope=principal, ttl_s=ttl)
        await self._console.evict(keep=max_sessions)

    async def console_session(self, digest: str) -> tuple[str, str, float] | None:
        """Return ``(principal, csrf, expires_at)`` of a live sign-in; None when absent or expired."""
        record = await self._console.get(digest)
        if record is None:
            return None
        value = record.value
        expires_at = float(value["expires_at"])
        if expires_at <= time.time():
            return None
        return (str(value["principal"]), str(value["csrf"]), expires_at)

    async def close_console_session(self, digest: str) -> bool:
        """End a sign-in; tell whether there was one."""
        return await self._console.delete(digest)

    # -- results of non-streamed turns, by Idempotency-Key ---------------------------------------
    async def claim_key(
        self, principal: str, scope: str, key: str, fp: str, ttl_s: float, stale_s: float
    ) -> tuple[str, Any] | None:
        """Claim ``key`` for a computation, or return ``(fingerprint, result)`` of its holder."""
        token = uuid.uuid4().hex
        claim = await self._turn_keys.claim(
            _digest(principal, scope, key),
            {"fingerprint": fp, "result": None},
            owner=token,
            scope=principal,
            ttl_s=max(ttl_s, 0.001),
            stale_after_s=max(stale_s, 0.001),
        )
        if claim.won:
            self._claims[(principal, scope, key)] = (token, max(ttl_s, 0.001), fp)
            return None
        value = claim.record.value
        return (str(value["fingerprint"]), value.get("result"))

    async def touch_key(self, principal: str, scope: str, key: str) -> None:
        """Mark the computation under ``key`` alive."""
        held = self._claims.get((principal, scope, key))
        if held is not None:
            await self._turn_keys.touch(_digest(principal, scope, key), expect=Expect(owner=held[0]))

    async def finish_key(self, principal: str, scope: str, key: str, result: Any) -> None:
        """Store the result of the computation under ``key``; its TTL starts now."""
        held = self._claims.pop((principal, scope, key), None)
        if held is None:
            return
        await self._turn_keys.release(
            _digest(principal, scope, key),
            expect=Expect(owner=held[0]),
            value={"fingerprint": held[2], "result": result},
            ttl_s=held[1],
        )

    async def drop_key(self, principal: str, scope: str, key: str) -> None:
        """Release an unfinished claim (a retry computes again)."""
        held = self._claims.pop((principal, scope, key), None)
        if held is not None:
            await self._turn_keys.delete(_digest(principal, scope, key), expect=Expect(owner=held[0]))

    # -- the chat index (hermes_api_server.kernel_chat_index)
    async def chat_sessions(
        self, principal: str, key: str, ttl_s: float, limit: int
    ) -> list[tuple[str, bool]]:
        """Return ``(session id, head)`` recorded under ``key`` within ``ttl_s``, newest first."""
        return await self._chats.sessions(principal, key, ttl_s, limit)

    async def record_chat(
        self,
        principal: str,
        session_id: str,
        heads: Sequence[str],
        earlier: Sequence[str],
        limit: int = 0,
        *,
        first: bool = False,
    ) -> dict[str, list[tuple[str, bool]]]:
        """Make ``heads`` the session's latest points; add the ``earlier`` keys that are missing."""
        return await self._chats.record(principal, session_id, heads, earlier, limit, first=first)

    async def sweep_chat_index(self, ttl_s: float, max_entries: int) -> None:
        """Drop expired keys, then the least recently recorded past ``max_entries``."""
        await self._chats.sweep(max_entries)
