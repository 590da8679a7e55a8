"""Which session a stateless chat continues when no header names one: its history
(docs/reference/api-server.md#chat-sessions).

A client without a chat id sends the whole conversation each time, so the conversation is known
by what it has said, not by how it opened. A first turn (no assistant message in the body) opens
a new session. At the end of each turn the server records *history keys* of the transcript the
turn left, pointing at its session; a later request looks up the key of the history before its
last user message. The transcript is taken in the projection reconcile compares with
(:func:`hermes_core.comparable_messages`), empty messages left out, and keyed twice: as stored
(what a client that echoes the rows sends) and as the client was answered (the streamed content
is every text delta of the turn; a JSON answer is the final text). An edit or a regenerate
re-sends a shorter history, whose key an earlier turn end recorded: the same session is found and
the turn's reconcile archives the replaced rows. A history no key matches opens a new session
seeded from the body, with the keys of its earlier turns recorded too.

Two conversations whose visible histories are word for word the same reach the same key. The key
then names every session recorded under it; the one whose latest point it is (most recently
recorded first) is chosen, which archives nobody's rows. When the key is not the latest point of
any of them, the request opens a new session seeded from the body instead of rewinding one of
them: nothing of another chat is archived, at the price of an empty folder.

Keys live in the API server's records (:mod:`hermes_api_server.kernel_chat_index`; shared by every
instance on PostgreSQL), expire after ``chat_index_ttl_s`` and are capped at
``chat_index_max_entries``. When this process is the only writer (a storage backend that is not
shared: SQLite, memory), the keys it has read or written lately are also mirrored in memory, so
a continuing conversation's lookup costs no trip to the database thread; the mirror is emptied at
each sweep.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import secrets
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from hermes_core import SeedMessage, comparable_messages

if TYPE_CHECKING:
    from hermes_api_server.chat_session import ChatSession
    from hermes_api_server.convert import Conversation
    from hermes_api_server.records import ApiRecords

log = logging.getLogger("hermes.api")
Pairs = Sequence[tuple[str, str]]
Found = list[tuple[str, bool]]
#: How many sessions one key may name that a lookup weighs.
CANDIDATES = 8
#: How many keys the in-memory mirror holds (least recently used go first).
MIRRORED = 10_000


def new_session_id() -> str:
    """Return ``api-`` + 16 random hex digits: a session no other conversation has."""
    return "api-" + secrets.token_hex(8)


def history_key(user: str | None, pairs: Pairs) -> str:
    """Return the key of a transcript: 32 hex of sha256 over the frontend user and the
    non-empty ``(role, normalized text)`` entries (the principal is stored beside it)."""
    kept = [[role, text] for role, text in pairs if text and role in ("user", "assistant")]
    blob = json.dumps([user or "", kept], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def turn_points(pairs: Pairs) -> list[Pairs]:
    """Return the prefixes of ``pairs`` that end a turn: each assistant entry followed by a user
    entry or by nothing."""
    return [
        pairs[: i + 1]
        for i, (role, _) in enumerate(pairs)
        if role == "assistant" and (i + 1 == len(pairs) or pairs[i + 1][0] == "user")
    ]


class ChatIndex:
    """History keys → sessions, in the API server's records.

    :param store: the records.
    :param ttl_s: how long a key is kept after it was last recorded.
    :param max_entries: at most this many keys are kept (the oldest go first).
    """

    def __init__(self, store: ApiRecords, ttl_s: float, max_entries: int) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.mirror = None if store.shared else Mirror()

    async def place(self, target: ChatSession, conv: Conversation, principal: str) -> ChatSession:
        """Give a request that no header placed its session: new, or found by its history."""
        if not any(m.role == "assistant" for m in conv.history):
            return dataclasses.replace(target, id=new_session_id(), first=True)
        pairs = comparable_messages(conv.history)
        key = history_key(target.user, pairs)
        found = await self._sessions(principal, key)
        chosen = _choose(found)
        if chosen is not None:
            return dataclasses.replace(target, id=chosen)
        if found:
            log.info("chat history names %d sessions, none at that point: opening a new one", len(found))
        return dataclasses.replace(target, id=new_session_id(), seeded=True, first=True)

    async def record(
        self,
        principal: str,
        target: ChatSession,
        conv: Conversation,
        answered: str,
        stored: Pairs,
    ) -> None:
        """Record the keys of the transcript a turn left (see the module docstring).

        :param answered: the assistant text the client got for this turn.
        :param stored: the session's transcript after the turn, as reconcile compares it.
        """
        user = target.user
        turn = [SeedMessage(role="user", text=conv.text), SeedMessage(role="assistant", text=answered)]
        sent = comparable_messages([*conv.history, *turn])
        heads = {history_key(user, sent), history_key(user, stored)}
        earlier: Iterable[str] = ()
        if target.seeded:
            earlier = {history_key(user, p) for p in turn_points(comparable_messages(conv.history))}
        news = sorted(set(earlier) - heads)
        want = 0 if self.mirror is None else CANDIDATES
        now = await self.store.record_chat(
            principal, target.id, sorted(heads), news, want, first=target.first
        )
        if self.mirror is not None:
            self.mirror.recorded(principal, target.id, now, news)

    async def _sessions(self, principal: str, key: str) -> Found:
        mirror = self.mirror
        if mirror is None:
            return await self.store.chat_sessions(principal, key, self.ttl_s, CANDIDATES)
        known = mirror.get(principal, key)
        if known is not None:
            return known
        generation = mirror.generation
        found = await self.store.chat_sessions(principal, key, self.ttl_s, CANDIDATES)
        if mirror.generation == generation:  # no turn end wrote meanwhile: still what is stored
            mirror.put(principal, key, found)
        return found

    async def sweep(self) -> None:
        """Drop expired keys and the oldest past the cap."""
        await self.store.sweep_chat_index(self.ttl_s, self.max_entries)
        if self.mirror is not None:
            self.mirror.clear()


class Mirror:
    """What the database holds for the keys looked up or recorded lately, kept exact by updating
    it with every write this process makes (it is the database's only writer)."""

    def __init__(self, size: int = MIRRORED) -> None:
        self.size = size
        self.generation = 0
        self._keys: OrderedDict[tuple[str, str], Found] = OrderedDict()
        # Which mirrored keys name a session (may also hold keys evicted since).
        self._naming: dict[str, set[tuple[str, str]]] = {}

    def get(self, principal: str, key: str) -> Found | None:
        found = self._keys.get((principal, key))
        if found is not None:
            self._keys.move_to_end((principal, key))
        return found

    def put(self, principal: str, key: str, found: Found) -> None:
        ident = (principal, key)
        self._keys[ident] = found
        self._keys.move_to_end(ident)
        for session_id, _ in found:
            self._naming.setdefault(session_id, set()).add(ident)
        while len(self._keys) > self.size:
            self._keys.popitem(last=False)
        if len(self._naming) > 4 * self.size:  # stale entries of evicted keys: start over
            self.clear()

    def recorded(
        self, principal: str, session_id: str, heads: dict[str, Found], earlier: Iterable[str]
    ) -> None:
        """Apply a turn end: the session's other keys lose their head, ``heads`` are as stored
        now, keys it added behind are read again when next needed."""
        self.generation += 1
        for ident in self._naming.pop(session_id, ()):
            found = self._keys.get(ident)
            if found is not None:
                self._keys[ident] = [(sid, head and sid != session_id) for sid, head in found]
        for key in earlier:
            self._keys.pop((principal, key), None)
        for key, found in heads.items():
            self.put(principal, key, found)

    def clear(self) -> None:
        self.generation += 1
        self._keys.clear()
        self._naming.clear()


def _choose(found: Sequence[tuple[str, bool]]) -> str | None:
    """Pick among the sessions one key names (most recently recorded first)."""
    if len(found) == 1:
        return found[0][0]
    return next((session_id for session_id, head in found if head), None)
