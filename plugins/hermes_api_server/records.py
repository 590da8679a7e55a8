"""What the API server keeps durably, whichever database holds it (docs/reference/api-server.md#persistence).

:class:`ApiRecords` is the one interface the handlers and the run manager type against;
:class:`hermes_api_server.kernel_records.KernelApiRecords` implements it over ``kernel.records``,
so the kernel's storage backend, whichever it is, keeps them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class ApiRecords(Protocol):
    """Stored responses, conversation names, run statuses, idempotency keys, console sessions and
    the chat index."""

    #: True when other instances write the same records (a non-terminal run may be theirs): the
    #: storage backend lives on a database server, or a shared run bus joins several instances.
    shared: bool
    max_responses: int

    async def open(self) -> None: ...
    async def close(self) -> None: ...

    # -- responses
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
        """Store (or replace) a response with the input items it was given."""
        ...

    async def get_response(self, principal: str, response_id: str) -> dict[str, Any] | None:
        """Return ``{session_id, through_row_id, instructions, object, input}`` (``input``: the
        input items, None for a response stored before they were kept)."""
        ...

    async def delete_response(self, principal: str, response_id: str) -> bool: ...
    async def conversation(self, principal: str, name: str) -> str | None: ...

    # -- runs
    async def put_run(self, run_id: str, principal: str, status: dict[str, Any], terminal: bool) -> bool:
        """Write a run's status unless the stored one is terminal already (the first end stays);
        return whether it was written."""
        ...

    async def get_run(self, run_id: str) -> tuple[str, dict[str, Any]] | None: ...
    async def non_terminal_runs(self) -> list[tuple[str, str, dict[str, Any]]]: ...
    async def runs_of(self, principal: str, limit: int) -> list[dict[str, Any]]: ...
    async def run_key(self, principal: str, key: str) -> tuple[str, str] | None: ...
    async def put_run_key(self, principal: str, key: str, fp: str, run_id: str) -> None: ...
    async def sweep(self, retention_s: float, key_ttl_s: float) -> None: ...
    async def count_runs(self) -> int: ...

    # -- console sign-in sessions, by the SHA-256 of their cookie value (docs/console.md#security-model)
    async def open_console_session(
        self, digest: str, principal: str, csrf: str, expires_at: float, max_sessions: int
    ) -> None:
        """Store a session; past ``max_sessions`` live ones, those ending soonest are dropped."""
        ...

    async def console_session(self, digest: str) -> tuple[str, str, float] | None:
        """Return ``(principal, csrf, expires_at)`` of a live session; None when absent or expired."""
        ...

    async def close_console_session(self, digest: str) -> bool:
        """End a session; tell whether there was one."""
        ...

    # -- results of non-streamed chat and Responses requests, by Idempotency-Key
    async def claim_key(
        self, principal: str, scope: str, key: str, fp: str, ttl_s: float, stale_s: float
    ) -> tuple[str, Any] | None:
        """Claim ``key`` for a computation, or return what holds it.

        :returns: None when the caller now holds the key; else ``(fingerprint, result)`` of the
            record there, ``result`` None while its computation is still under way. A record
            older than ``ttl_s``, or an unfinished one whose holder has not touched it for
            ``stale_s`` (its instance died), is replaced by the caller's claim.
        """
        ...

    async def touch_key(self, principal: str, scope: str, key: str) -> None:
        """Tell twins the computation under ``key`` is still alive."""
        ...

    async def finish_key(self, principal: str, scope: str, key: str, result: Any) -> None:
        """Store the result (JSON) of the computation under ``key``."""
        ...

    async def drop_key(self, principal: str, scope: str, key: str) -> None:
        """Release an unfinished claim (the computation failed: a retry computes again)."""
        ...

    # -- the chat index: history keys of stateless chats -> sessions (hermes_api_server.chat_index)
    async def chat_sessions(
        self, principal: str, key: str, ttl_s: float, limit: int
    ) -> list[tuple[str, bool]]:
        """Return ``(session id, head)`` recorded under ``key`` within ``ttl_s``, most recently
        recorded first; ``head``: the key is the latest point of that session's conversation."""
        ...

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
        """Make ``heads`` the session's latest points; add the ``earlier`` keys that are missing.
        With ``limit`` > 0, return what each head key names afterwards (as :meth:`chat_sessions`,
        for a caller that mirrors the index); else ``{}``. ``first``: nothing of this session
        was recorded before (it has no latest points to demote)."""
        ...

    async def sweep_chat_index(self, ttl_s: float, max_entries: int) -> None:
        """Drop keys recorded more than ``ttl_s`` ago, then the oldest past ``max_entries``."""
        ...
