"""The table of a kernel's delegated children, their limits and lifecycle (docs/reference/core.md#subagents).

:class:`Subagents` is reached as ``kernel.sessions.children``. A delegating tool (the ``delegation``
plugin's ``delegate_task``) asks it to :meth:`~Subagents.spawn` a child: a real session of its
own, opened with ``source="tool"`` and ``parent_session_id`` set, the parent's workspace, profile,
file access and tenant, and a :class:`~hermes_core.subagent.Lineage` saying where it sits in the
tree. Transports read the same table to show, interrupt and steer children. Closing a parent
closes its children (``Sessions.forget`` calls :meth:`~Subagents.close_children`). The
``[delegation]`` settings are :class:`DelegationLimits`; a background child's result waits here
as a note for its parent's model. One child, its entry and its event payload are
:mod:`hermes_core.subagent`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.errors import ConfigError, StorageError
from hermes_core.events import SubagentEvent, SubagentKind, SubagentStatus
from hermes_core.subagent import Lineage, Subagent

if TYPE_CHECKING:
    from hermes_core.kernel import Kernel
    from hermes_core.session.live import Session
    from hermes_core.session_tenants import SessionTenants

log = logging.getLogger("hermes.subagents")
REMEMBERED_FINISHED = 256
MAX_NOTES = 8
NOTE_CHARS = 4000
#: How background results taken at a tool boundary are appended to the round's last tool result.
BACKGROUND_MARKER = "\n\n[Background results] "


@dataclass(frozen=True, slots=True)
class DelegationLimits:
    """The ``[delegation]`` settings, each a positive integer."""

    max_concurrent_children: int = 3
    max_spawn_depth: int = 1
    max_background_children: int = 2
    max_child_tool_rounds: int = 20

    @classmethod
    def from_section(cls, raw: dict[str, Any]) -> DelegationLimits:
        """Validate the raw ``[delegation]`` table; unknown keys and bad values are a ``ConfigError``."""
        known = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, int] = {}
        for key, value in raw.items():
            if key not in known:
                raise ConfigError(f"delegation.{key}: unknown setting (known: {', '.join(sorted(known))})")
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"delegation.{key}: must be a positive integer, got {value!r}")
            values[key] = value
        return cls(**values)

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


class Subagents:
    """The delegated children of one kernel (``kernel.sessions.children``)."""

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._active: dict[str, Subagent] = {}
        self._finished: OrderedDict[str, Subagent] = OrderedDict()
        self._paused: set[str] = set()
        self._notes: dict[str, list[str]] = {}
        self._tenants: SessionTenants | None = None

    # -- settings ----------------------------------------------------------------------------
    @property
    def limits(self) -> DelegationLimits:
        """The limits in force, from the ``[delegation]`` settings table."""
        return DelegationLimits.from_section(self._kernel.settings.section("delegation"))

    def is_paused(self, parent_id: str) -> bool:
        """Tell whether new delegations from this session are held back."""
        return parent_id in self._paused

    def set_paused(self, parent_id: str, paused: bool) -> None:
        """Pause (refuse new spawns from) or resume a session's delegation."""
        if paused:
            self._paused.add(parent_id)
        else:
            self._paused.discard(parent_id)

    def add_note(self, session_id: str, text: str) -> None:
        """Keep a background child's result for the session's next turn (the last ``MAX_NOTES``)."""
        notes = self._notes.setdefault(session_id, [])
        notes.append(text[:NOTE_CHARS])
        del notes[:-MAX_NOTES]

    def take_notes(self, session_id: str) -> list[str]:
        """Return and forget the notes kept for a session: a running turn takes them at its next
        tool boundary, a starting turn adds them to its system prompt."""
        return self._notes.pop(session_id, []) if self._notes else []

    @staticmethod
    def depth_of(session: Session) -> int:
        """0 for a top-level session, else the child's depth."""
        return session.lineage.depth if session.lineage is not None else 0

    # -- the table ---------------------------------------------------------------------------
    def get(self, subagent_id: str) -> Subagent | None:
        """Return a running or recently finished child."""
        return self._active.get(subagent_id) or self._finished.get(subagent_id)

    def children(
        self, parent_id: str, *, active_only: bool = False, recursive: bool = False
    ) -> list[Subagent]:
        """Return a session's children, oldest first (their descendants too with ``recursive``)."""
        pool = list(self._active.values())
        if not active_only:
            pool = list(self._finished.values()) + pool
        pool.sort(key=lambda s: s.started_at)
        parents = {parent_id}
        found: list[Subagent] = []
        for sub in pool:  # oldest first: a parent always started before its children
            if sub.parent_id in parents:
                found.append(sub)
                if recursive:
                    parents.add(sub.subagent_id)
        return found

    def active(self) -> list[Subagent]:
        """Return every running child of this kernel, oldest first."""
        return sorted(self._active.values(), key=lambda s: s.started_at)

    def root_id(self, subagent_id: str) -> str | None:
        """Return the id of the top-level session a child's tree hangs from (None when unknown)."""
        sub = self.get(subagent_id)
        seen = 0
        while sub is not None and seen < 64:
            parent = self.get(sub.parent_id)
            if parent is None:
                return sub.parent_id
            sub, seen = parent, seen + 1
        return None

    def active_count(self, parent_id: str, *, background: bool | None = None) -> int:
        """Count a session's running children (only background or foreground ones when asked)."""
        return sum(
            1
            for s in self._active.values()
            if s.parent_id == parent_id and (background is None or s.background == background)
        )

    # -- lifecycle ---------------------------------------------------------------------------
    async def spawn(
        self,
        parent: Session,
        *,
        goal: str,
        model: str | None = None,
        hidden_tools: frozenset[str] = frozenset(),
        role: str = "leaf",
        task_index: int = 0,
        task_count: int = 1,
        delegation_id: str | None = None,
    ) -> Subagent:
        """Open a child session of ``parent`` and enter it in the table (status ``queued``).

        The child gets the parent's workspace, profile and file access, ``model`` (the parent's
        when None), a fresh conversation, ``hidden_tools`` filtered out and the configured
        tool-round cap.
        """
        limits = self.limits
        depth = self.depth_of(parent) + 1
        asks_on = parent.lineage.asks_on if parent.lineage is not None else parent.id
        child = await self._kernel.sessions.open(
            source="tool",
            owner=f"subagent:{parent.id}",
            cwd=parent.cwd,
            profile=parent.profile,
            model=model or parent.record.model,
            parent_session_id=parent.id,
        )
        await self._claim(parent, child)
        child.lineage = Lineage(child.id, parent.id, depth, asks_on, limits.max_child_tool_rounds)
        child.file_access = parent.file_access
        child.title_refine_started = True
        child.set_tool_filter(hidden_tools)
        sub = Subagent(
            subagent_id=child.id,
            parent_id=parent.id,
            depth=depth,
            goal=goal,
            task_index=task_index,
            task_count=task_count,
            model=child.record.model or model or parent.record.model or self._kernel.models.default,
            role=role,
            delegation_id=delegation_id,
            session=child,
        )
        self._active[sub.subagent_id] = sub
        return sub

    async def _claim(self, parent: Session, child: Session) -> None:
        """Give a new child its parent's tenant (docs/reference/tui-gateway.md#tenants), before
        its id is known to anyone: unclaimed, it would be the ``default`` tenant's. When the
        claim cannot be written, the child is closed and the spawn fails."""
        records = self._kernel.records
        if not records.available:
            return
        if self._tenants is None:
            from hermes_core.session_tenants import SessionTenants

            self._tenants = SessionTenants(records)
        try:
            await self._tenants.inherit(child.id, parent.id)
        except Exception as exc:
            await child.close()
            raise StorageError(f"could not record the child session's tenant: {type(exc).__name__}") from exc

    def finish(self, sub: Subagent, status: SubagentStatus) -> None:
        """Move a child to the finished table with its terminal status."""
        sub.status = status
        sub.ended_at = time.time()
        sub.session = None
        sub.task = None
        self._active.pop(sub.subagent_id, None)
        self._finished[sub.subagent_id] = sub
        while len(self._finished) > REMEMBERED_FINISHED:
            self._finished.popitem(last=False)

    def emit(self, sub: Subagent, kind: SubagentKind, payload: dict[str, Any] | None = None) -> None:
        """Emit a ``SubagentEvent`` about ``sub`` on its parent session."""
        parent = self._kernel.sessions.get(sub.parent_id)
        if parent is None:
            return
        run = parent.run
        parent.emit(
            SubagentEvent(
                session_id=parent.id,
                turn_id=run.turn_id if run is not None else None,
                kind=kind,
                subagent_id=sub.subagent_id,
                parent_id=sub.parent_id,
                payload=payload or {},
                depth=sub.depth,
                goal=sub.goal,
                task_index=sub.task_index,
                task_count=sub.task_count,
                model=sub.model,
                status=sub.status,
                usage=sub.usage,
                delegation_id=sub.delegation_id,
            )
        )

    async def interrupt(self, subagent_id: str, *, reason: Literal["user", "system"] = "user") -> bool:
        """Interrupt a running child (and so its own children); False when it is not running."""
        sub = self._active.get(subagent_id)
        if sub is None or sub.session is None:
            return False
        await sub.session.interrupt(reason=reason, discard_queue=True)
        return True

    async def interrupt_children(
        self, parent_id: str, *, reason: Literal["user", "system"] = "system"
    ) -> int:
        """Interrupt every running child of a session at once; return how many."""
        subs = self.children(parent_id, active_only=True)
        await asyncio.gather(*(self.interrupt(s.subagent_id, reason=reason) for s in subs))
        return len(subs)

    def steer(self, subagent_id: str, text: str) -> tuple[Literal["queued", "rejected"], str | None]:
        """Queue guidance for a child's next tool boundary, or say why it cannot be."""
        sub = self._active.get(subagent_id)
        if sub is None or sub.session is None:
            return "rejected", "not_running"
        answer = sub.session.steer(text)
        if answer == "accepted":
            return "queued", None
        return "rejected", answer

    async def close_children(self, parent_id: str) -> None:
        """Stop and close every child of a closing session (background ones too)."""
        for sub in self.children(parent_id, active_only=True):
            task = sub.task
            session = sub.session
            if task is not None and not task.done():
                task.cancel()
            if session is not None:
                try:
                    await session.close()
                except Exception:
                    log.warning("closing subagent %s failed", sub.subagent_id, exc_info=True)
            if task is not None:
                with contextlib.suppress(BaseException):
                    await task
            if sub.active:
                self.finish(sub, "interrupted")
        self._paused.discard(parent_id)
        self._notes.pop(parent_id, None)
