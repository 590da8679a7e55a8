"""The storage protocol: sessions, messages, leases (docs/reference/core.md#sessions-and-storage).

A backend is made by a ``StorageSpec`` factory. Every method is a coroutine and must not block
the event loop (the SQLite plugin runs its work on a writer thread). Each mutating method is one
transaction: either all of it lands or none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hermes_core.content import Part


@dataclass(frozen=True, slots=True)
class StoredToolCall:
    """A tool call stored on an assistant row."""

    call_id: str  # the core's id, tc_<assistant row id>_<index>
    provider_call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class NewRow:
    """A message row to insert.

    ``position`` orders rows in the projection; None means "after everything" (the backend uses
    the new row id). A compression summary takes the position of the first row it replaces.
    ``tool_calls`` on an assistant row may use the placeholder ``call_id`` ``""``: the backend
    fills ``tc_<row id>_<index>`` once the row id is known.
    """

    role: str
    content: str
    parts: tuple[Part, ...] = ()
    tool_calls: tuple[StoredToolCall, ...] = ()
    call_id: str | None = None
    provider_call_id: str | None = None
    tool_name: str | None = None
    display_kind: str | None = None
    model: str | None = None
    reasoning: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    position: int | None = None
    created_at: float | None = None


@dataclass(frozen=True, slots=True)
class Row:
    """A stored message row; ``id`` is the durable row id clients see as ``row_id``."""

    id: int
    session_id: str
    position: int
    role: str
    content: str
    parts: tuple[Part, ...]
    tool_calls: tuple[StoredToolCall, ...]
    call_id: str | None
    provider_call_id: str | None
    tool_name: str | None
    display_kind: str | None
    active: bool
    archived_reason: str | None
    model: str | None
    reasoning: str | None
    input_tokens: int | None
    output_tokens: int | None
    meta: Mapping[str, Any]
    created_at: float


PREVIEW_CHARS = 200


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A stored session (docs/reference/core.md#session-ids)."""

    id: str
    source: str
    cwd: str
    profile: str
    model: str | None = None
    provider: str | None = None
    reasoning_effort: str | None = None
    title: str | None = None
    title_origin: str | None = None
    parent_session_id: str | None = None
    channel_key: str | None = None
    system_overlay: str | None = None
    usage: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, str] = field(default_factory=dict)
    created_at: float = 0.0
    updated_at: float = 0.0
    message_count: int = 0
    #: The first active user message, cut to ``PREVIEW_CHARS``; filled by reads, never written.
    preview: str = ""


@dataclass(frozen=True, slots=True)
class RecordClaim:
    """A record a new session's first write claims in its own transaction (the ``claims`` of
    :meth:`LeasedCreate.create_leased_session`): ``namespace``/``key`` is stored for ``owner``
    with the value ``{}``, epoch 1, no expiry, as ``claim_record`` stores an absent key.

    Only for keys nobody can hold yet (a tenant's claim of an id made for that very session): a
    live record already there, whoever holds it, fails the whole write.
    """

    namespace: str
    key: str
    owner: str


@dataclass(frozen=True, slots=True)
class SessionPage:
    """One page of a session listing; ``next_cursor`` is None on the last page."""

    sessions: list[SessionRecord]
    next_cursor: str | None


class Storage(Protocol):
    """What the kernel needs from a storage backend."""

    async def open(self) -> None:
        """Open (and migrate) the store; raise ``StorageError`` naming the path if unusable."""
        ...

    async def close(self) -> None:
        """Flush and close."""
        ...

    async def get_session(self, session_id: str) -> SessionRecord | None: ...

    async def find_session_by_title(self, title: str) -> SessionRecord | None:
        """Return the most recently active session with exactly this title."""
        ...

    async def create_session(self, record: SessionRecord, rows: Sequence[NewRow] = ()) -> list[int]:
        """Insert a session and its first rows in one transaction; return the row ids."""
        ...

    async def update_session(self, session_id: str, fields: Mapping[str, Any]) -> None:
        """Update session columns (names as in :class:`SessionRecord`); bump ``updated_at``."""
        ...

    async def list_sessions(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        cwd: str | None = None,
        title: str | None = None,
        hidden_sources: Sequence[str] = ("tool",),
    ) -> SessionPage:
        """List sessions by last activity, newest first, ``(updated_at, id)`` keyset paging."""
        ...

    async def latest_session_for_channel(self, channel_key: str) -> str | None: ...

    async def acquire_lease(
        self, session_id: str, owner: str, ttl_s: float, take_over: str | None = None
    ) -> str | None:
        """Take the writer lease; return None on success, else the current holder's owner string.

        A lease whose ``lease_expires_at`` has passed may be taken over. So may an unexpired one
        whose holder is exactly ``take_over`` (the kernel passes a holder it found to be a dead
        process); the comparison and the change are one transaction, so a holder that changed in
        between keeps its lease. A session row that does not exist yet is leased by a placeholder
        so that two processes cannot both create it.
        """
        ...

    async def renew_lease(self, session_id: str, owner: str, ttl_s: float) -> bool:
        """Extend our lease; False if we no longer hold it."""
        ...

    async def release_lease(self, session_id: str, owner: str) -> None: ...

    async def append_rows(self, session_id: str, rows: Sequence[NewRow]) -> list[int]:
        """Append rows in one transaction; return their ids in order."""
        ...

    async def load_rows(self, session_id: str, *, include_archived: bool = False) -> list[Row]:
        """Return rows ordered by ``(position, id)``; active only unless asked."""
        ...

    async def rewrite(
        self,
        session_id: str,
        *,
        archive_row_ids: Sequence[int] = (),
        archived_reason: str | None = None,
        append: Sequence[NewRow] = (),
        session_fields: Mapping[str, Any] | None = None,
    ) -> list[int]:
        """Soft-archive rows, append rows and update the session in one transaction.

        Archived rows get ``active = 0`` and ``archived_reason``; nothing is ever deleted.
        Returns the ids of the appended rows.
        """
        ...

    async def update_row_meta(self, row_id: int, meta: Mapping[str, Any]) -> None:
        """Merge keys into a row's ``meta`` JSON (e.g. a tool result's final state).

        A write to the row's session like any other: a backend that fences writes on the writer
        lease refuses it with ``LeaseLost`` (changing nothing) once another process took it over.
        """
        ...


class LoopWrites(Protocol):
    """Optional for a storage backend: say when a write would be the event loop's own work.

    A backend whose small writes sometimes run on the event loop itself (SQLite runs them
    inline while its database thread is idle) says so, and the kernel then sends a turn's first
    model call before it starts the user row's write, rather than beside it: the request does not
    wait behind the write (docs/reference/core.md#the-turn-loop). Without this method, the write
    starts beside the call.
    """

    def writes_on_loop(self) -> bool:
        """Whether a session's small write started now would run on the event loop."""
        ...


class AppendUpdates(Protocol):
    """Optional for a storage backend: rows appended and session columns set in one write.

    A turn ends with its reply's row and the session's new usage total. A backend with this
    method stores both in one transaction (one commit, one round trip on a database server)
    instead of ``append_rows`` then ``update_session`` (docs/reference/core.md#the-turn-loop).
    Without it, the kernel makes those two calls.
    """

    async def append_rows_and_update(
        self, session_id: str, rows: Sequence[NewRow], fields: Mapping[str, Any]
    ) -> list[int]:
        """Append ``rows`` and set the session columns ``fields`` (names as in
        :class:`SessionRecord`; ``updated_at`` moves too) in one transaction; return the rows'
        ids in order.

        All or nothing: an unknown field (``InvalidValue``), a session that is not stored
        (``SessionNotFound``) or a write the lease refuses (``LeaseLost``, where the backend
        fences writes) stores no row and changes no column.
        """
        ...


class LeasedCreate(Protocol):
    """Optional for a storage backend: a new session's lease taken by its first write.

    A backend with this method saves a new session one write before its first token: the kernel
    stores a session whose id it made with this instead of ``acquire_lease`` then
    ``create_session`` (docs/reference/core.md#writer-lease). Without it, the lease is taken on
    its own as the session opens.
    """

    async def create_leased_session(
        self,
        record: SessionRecord,
        rows: Sequence[NewRow],
        owner: str,
        ttl_s: float,
        claims: Sequence[RecordClaim] = (),
    ) -> list[int]:
        """Take the writer lease of ``record.id`` for ``owner`` (as ``acquire_lease`` would) and
        insert the session, its first rows and the records ``claims`` names, all in one
        transaction; return the row ids.

        A placeholder row that ``acquire_lease`` left is filled when its lease is ours, free or
        expired. Raise ``StorageError`` (and write no session, row or record) when the session is
        stored already, another holder's unexpired lease reserves the id, or a live record is
        already stored under a claim's key (an expired one counts as absent and is replaced).
        The kernel passes ``claims`` only when there are some.
        """
        ...
