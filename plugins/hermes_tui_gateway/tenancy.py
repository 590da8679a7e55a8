"""Tenants on ``hermes tui --ws`` (docs/reference/tui-gateway.md#tenants).

A WebSocket connection serves the tenant of the key it authenticated with. The connection's
:class:`~hermes_core.Principal` is the current principal of every task that serves one of its
requests (a context variable set before its peer starts). Through it the gateway's table of
live sessions (:class:`LiveTable`) holds only the current tenant's sessions, and the stored
sessions a method may name, list or resume are those the kernel's session tenants
(:class:`hermes_core.SessionTenants`) give that tenant, so another tenant's id is answered
exactly like an unknown one. The stdio connection is the parent process's own and sees
everything, as before tenants existed.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from hermes_core import DEFAULT_TENANT

if TYPE_CHECKING:
    from hermes_core import ChargeTo, Kernel, Principal, SessionPage, SessionRecord, SessionTenants

#: How many pages of stored sessions a listing reads to fill itself with the tenant's own.
_PAGES = 10
_CURRENT: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "hermes_tui_principal", default=None
)


def set_current(who: Principal | None) -> None:
    """Make ``who`` the principal of this task and of every task it starts."""
    _CURRENT.set(who)


def current() -> Principal | None:
    """Return the principal of the connection this task serves (None: stdio, or outside one)."""
    return _CURRENT.get()


def tenant() -> str | None:
    """Return the tenant this task serves, or None when it is not restricted to one (stdio)."""
    who = _CURRENT.get()
    return None if who is None else who.tenant


def charge() -> ChargeTo | None:
    """Return who a turn started here charges: a stored key's key and tenant buckets; None (the
    configured default) for the gateway's token and the stdio connection."""
    from hermes_core import ChargeTo, SessionTenants

    who = _CURRENT.get()
    if who is None or not SessionTenants.claims(who):
        return None

    return ChargeTo(key_id=who.key_id, tenant=who.tenant)


async def sees(tenants: SessionTenants | None, session_id: str) -> bool:
    """Tell whether the current connection may see a stored session."""
    serving = tenant()
    if serving is None or not session_id:
        return True
    if tenants is None:  # no records: no stored keys, every session is the default tenant's
        return serving == DEFAULT_TENANT
    return await tenants.sees(session_id, serving)


async def seen(tenants: SessionTenants | None, session_ids: list[str], *, exists: bool = True) -> set[str]:
    """Return those of ``session_ids`` the current connection may see.

    :param exists: the sessions are known to exist (stored or live); False for ids a client named.
    """
    serving = tenant()
    if serving is None or (tenants is None and serving == DEFAULT_TENANT):
        return set(session_ids)
    if tenants is None:
        return set()
    return await tenants.seen(session_ids, serving, exists=exists)


async def listing(
    kernel: Kernel, tenants: SessionTenants | None, limit: int, **filters: str | None
) -> SessionPage:
    """List stored sessions like ``kernel.sessions.list``, only those the current connection may
    see: pages are read (at most ``_PAGES``) until ``limit`` of them are found."""
    from hermes_core import SessionPage

    page = await kernel.sessions.list(limit=limit, title=filters.get("title"), cwd=filters.get("cwd"))
    if tenant() is None:
        return page
    found: list[SessionRecord] = []
    for _ in range(_PAGES):
        shown = await seen(tenants, [s.id for s in page.sessions])
        found.extend(s for s in page.sessions if s.id in shown)
        if len(found) >= limit or page.next_cursor is None:
            break
        page = await kernel.sessions.list(
            limit=limit, cursor=page.next_cursor, title=filters.get("title"), cwd=filters.get("cwd")
        )
    return SessionPage(found[:limit], None)


class _Tenanted(Protocol):
    tenant: str


_L = TypeVar("_L", bound=_Tenanted)


class LiveTable(Generic[_L]):
    """The live sessions by id, as the current connection sees them.

    Reads (``get``, ``in``, ``[]``, iteration, ``values``) leave out other tenants' sessions;
    writes and :attr:`all` see every one (the gateway's own bookkeeping).
    """

    def __init__(self) -> None:
        self.all: dict[str, _L] = {}

    def _shown(self, live: _L) -> bool:
        serving = tenant()
        return serving is None or live.tenant == serving

    def get(self, sid: str, default: _L | None = None) -> _L | None:
        live = self.all.get(sid)
        return live if live is not None and self._shown(live) else default

    def __contains__(self, sid: object) -> bool:
        live = self.all.get(sid) if isinstance(sid, str) else None
        return live is not None and self._shown(live)

    def __getitem__(self, sid: str) -> _L:
        live = self.all[sid]
        if not self._shown(live):
            raise KeyError(sid)
        return live

    def __setitem__(self, sid: str, live: _L) -> None:
        self.all[sid] = live

    def __delitem__(self, sid: str) -> None:
        del self.all[sid]

    def __iter__(self) -> Iterator[str]:
        return iter([sid for sid, live in self.all.items() if self._shown(live)])

    def __len__(self) -> int:
        return sum(1 for live in self.all.values() if self._shown(live))

    def values(self) -> list[_L]:
        return [live for live in self.all.values() if self._shown(live)]

    def items(self) -> list[tuple[str, _L]]:
        return [(sid, live) for sid, live in self.all.items() if self._shown(live)]


def may_answer(live: _Tenanted | None) -> bool:
    """Whether the current connection may answer a question of a session: not when the session is
    live here for another tenant. (A delegated child's question names the child's session, which
    is not live here; it is answered as before.)"""
    serving = tenant()
    return serving is None or live is None or live.tenant == serving
