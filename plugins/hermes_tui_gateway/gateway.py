"""The gateway's state: live sessions, connections and binding.

How a request reaches its method (the fast, ordered and slow tables) is
:mod:`hermes_tui_gateway.dispatch`, which :class:`Gateway` mixes in.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from hermes_core import DEFAULT_TENANT, SCHEMA_SHA256, SCHEMA_VERSION, SessionTenants, __version__
from hermes_tui_gateway import tenancy
from hermes_tui_gateway.conn import Conn
from hermes_tui_gateway.dispatch import Dispatcher, Params, Result, method_modules
from hermes_tui_gateway.gitinfo import git_branch
from hermes_tui_gateway.params import GatewayError
from hermes_tui_gateway.stream import VERBOSE, SessionStream
from hermes_tui_gateway.wire import EventParams, InfoExtra, ReadyPayload

if TYPE_CHECKING:
    from hermes_core import Kernel, Session
    from hermes_tui_gateway.settings import TuiSettings

log = logging.getLogger("hermes.tui")
EPOCH_SPACE = "tui.gateway"
EPOCH_KEY = "replay_epoch"
_T = TypeVar("_T")


@dataclass(slots=True)
class Live:
    """Gateway-held state of one live session."""

    session: Session
    stream: SessionStream
    created: float
    conn: Conn | None = None
    cols: int = 80
    close_on_disconnect: bool = False
    busy_policy: str = "queue"
    reasoning_display: str = "show"
    attachments: list[dict[str, Any]] = field(default_factory=list)
    orphan_timer: asyncio.TimerHandle | None = None
    #: The tenant the session belongs to (docs/reference/tui-gateway.md#tenants).
    tenant: str = DEFAULT_TENANT


class Gateway(Dispatcher):
    """Everything one ``hermes tui`` process shares across its connections.

    :param kernel: the running kernel.
    :param settings: the validated ``[tui]`` settings.
    """

    def __init__(self, kernel: Kernel, settings: TuiSettings) -> None:
        self.kernel = kernel
        self.settings = settings
        self.epoch = uuid.uuid4().hex
        #: Live sessions; reads see the current connection's tenant only (:mod:`.tenancy`).
        self.lives: tenancy.LiveTable[Live] = tenancy.LiveTable()
        #: Which tenant each stored session belongs to (None: storage without records).
        self.tenants: SessionTenants | None = None
        if kernel.records.available:
            self.tenants = SessionTenants(kernel.records)
        self.conns: set[Conn] = set()
        self.last_seq: dict[str, int] = {}
        self.known_stored: set[str] = set()
        self.pool = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="hermes-tui")
        self.cli_slots = asyncio.Semaphore(4)
        self.fast = {}
        self.ordered = {}
        self.slow = {}
        self.closing = False
        #: ``delegation.pause`` without a session: every session live here now and later.
        self.delegation_paused = False
        self.reload_settings: Callable[[], Awaitable[Any]] | None = None
        self.default_verbose = _configured_verbose(kernel)
        self.register_methods()

    async def load_epoch(self) -> None:
        """Take ``replay_epoch`` from the storage the event log lives in
        (docs/reference/tui-gateway.md#sequence-numbers-and-replay).

        With the log on, the epoch is a record of the storage backend: it stays the same across
        restarts for as long as the storage keeps its records (SQLite, PostgreSQL) and is new when
        they are gone (``memory`` storage after a restart, another or a wiped database). With the
        log off, or when the record cannot be read, it is new for every process.
        """
        if not self.kernel.events.enabled:
            return
        try:
            space = self.kernel.records.space(EPOCH_SPACE)
            found = await space.get(EPOCH_KEY)
            if found is None:
                await space.put(EPOCH_KEY, {"epoch": self.epoch})
                found = await space.get(EPOCH_KEY)
            value = found.value if found is not None else None
            epoch = value.get("epoch") if isinstance(value, dict) else None
            if isinstance(epoch, str) and len(epoch) == 32:
                self.epoch = epoch
        except Exception:
            log.exception("tui: cannot read replay_epoch from storage; using a new one")

    @property
    def data_dir(self) -> Path:
        """Return the data directory (``$HERMES_HOME`` or the platform data dir)."""
        data = self.kernel.settings.data_dir
        return Path(data) if data else Path.home() / ".hermes"

    # -- connections -------------------------------------------------------------------------
    def ready_payload(self) -> ReadyPayload:
        """Return the ``gateway.ready`` payload (docs/reference/tui-gateway.md#the-ready-event)."""
        return {
            "skin": {"name": "default", "colors": {}, "branding": {}},
            "version": __version__,
            "protocol": {"name": "hermes-tui-gateway", "version": 1},
            "replay_epoch": self.epoch,
            "capabilities": {
                "event_replay": True,
                "server_requests": False,
                "rewind": True,
                "steer": True,
                "queue": True,
            },
            "schema": {"version": SCHEMA_VERSION, "sha256": SCHEMA_SHA256},
        }

    def attach(self, conn: Conn) -> None:
        """Register a connection and greet it with ``gateway.ready``."""
        self.conns.add(conn)
        conn.notify_event("gateway.ready", self.ready_payload())

    async def detach(self, conn: Conn) -> None:
        """Forget a connection: close or detach its sessions
        (docs/reference/tui-gateway.md#connections-and-disconnects)."""
        conn.alive = False
        self.conns.discard(conn)
        for live in list(self.lives.all.values()):
            if live.conn is not conn:
                continue
            if live.close_on_disconnect:
                await self.close_session(live.session.id, reason="closed")
            else:
                self.bind(live, None)

    def bind(self, live: Live, conn: Conn | None) -> None:
        """Route a session's events to ``conn`` (``None`` detaches and arms the orphan timer)."""
        live.conn = conn
        live.stream.bind(conn)
        if live.orphan_timer is not None:
            live.orphan_timer.cancel()
            live.orphan_timer = None
        if conn is None and self.settings.orphan_grace_s > 0 and not self.closing:
            loop = asyncio.get_running_loop()
            live.orphan_timer = loop.call_later(self.settings.orphan_grace_s, self._reap, live)

    def _reap(self, live: Live) -> None:
        live.orphan_timer = None
        if live.conn is not None or self.lives.all.get(live.session.id) is not live:
            return
        if live.session.busy:
            self.bind(live, None)  # re-arm: only idle sessions are reclaimed
            return
        sid = live.session.id

        async def reclaim() -> None:
            await self.close_session(sid, reason="closed")
            for conn in list(self.conns):
                conn.notify_event("session.reclaimed", {"session_id": sid, "reason": "orphan"})

        self.kernel.spawn(reclaim(), name=f"tui-reap-{sid}")

    # -- sessions ----------------------------------------------------------------------------
    def adopt(self, session: Session, conn: Conn | None, tenant: str | None = None) -> Live:
        """Wrap a newly live session with its stream and bind it.

        :param tenant: the tenant it belongs to; by default the current connection's.
        """
        live_ref: list[Live] = []

        def extra() -> InfoExtra:
            live = live_ref[0] if live_ref else None
            out: InfoExtra = {
                "busy_policy": live.busy_policy if live else self.settings.busy_policy,
                "tools": self.toolsets(),
                "mcp_servers": self.mcp_servers(session.id),
                "version": __version__,
            }
            # docs/reference/tui-gateway.md#sessioninfo `branch?`: the git branch of the session's workspace,
            # absent outside a repository.
            branch = git_branch(session.info().cwd)
            if branch is not None:
                out["branch"] = branch
            return out

        stream = SessionStream(
            session,
            extra,
            self.settings.ring_events,
            self.settings.ring_bytes,
            self.last_seq.get(session.id, 0),
            interval_s=self.settings.stream_interval_s,
            long_interval_s=self.settings.stream_interval_long_s,
        )
        stream.on_tree = functools.partial(self.save_spawn_tree, session.id)
        live = Live(
            session=session,
            stream=stream,
            created=time.time(),
            busy_policy=self.settings.busy_policy,
            tenant=tenant or tenancy.tenant() or DEFAULT_TENANT,
        )
        stored_verbose = session.extra.get("tui.verbose")
        stream.verbose = stored_verbose if stored_verbose in VERBOSE else self.default_verbose
        stored_policy = session.extra.get("tui.busy_policy")
        if stored_policy in ("queue", "steer", "interrupt"):
            live.busy_policy = stored_policy
        live_ref.append(live)
        self.lives[session.id] = live
        if self.delegation_paused:
            self.kernel.sessions.children.set_paused(session.id, True)
        self.bind(live, conn)
        return live

    def save_spawn_tree(self, sid: str, subagent_ids: list[str]) -> None:
        """Store the spawn tree of a delegating turn that just completed
        (docs/reference/tui-gateway.md#subagents)."""
        from hermes_tui_gateway.methods_trees import auto_save

        self.kernel.spawn(auto_save(self, sid, subagent_ids), name=f"tui-tree-{sid}")

    def toolsets(self) -> dict[str, list[str]]:
        """Return the registered tools grouped by owning plugin."""
        registry = self.kernel.registry
        out: dict[str, list[str]] = {}
        for name in sorted(registry.tools):
            owner = registry.owners.get(("tools", name), "core")
            out.setdefault(owner, []).append(name)
        return out

    def mcp_servers(self, sid: str) -> list[dict[str, Any]]:
        """Return the tool servers (MCP) a session sees, as ``SessionInfo.mcp_servers`` entries."""
        from hermes_tui_gateway.encode import mcp_server_obj

        return [mcp_server_obj(s) for s in self.kernel.tool_sources.status(sid)]

    def live(self, sid: str) -> Live:
        """Return a live session or raise 4001 (``resumable`` from what this process knows)."""
        live = self.lives.get(sid)
        if live is None:
            raise GatewayError(
                4001, "session not found", {"session_id": sid, "resumable": sid in self.known_stored}
            )
        return live

    async def live_checked(self, sid: str) -> Live:
        """Return a live session or raise 4001, asking storage whether it is resumable."""
        live = self.lives.get(sid)
        if live is not None:
            return live
        resumable = sid in self.known_stored
        if not resumable and sid:
            try:
                resumable = await self.kernel.sessions.exists(sid)
            except Exception:
                resumable = False
        if resumable:
            resumable = await self.sees(sid)
        raise GatewayError(4001, "session not found", {"session_id": sid, "resumable": resumable})

    async def sees(self, sid: str) -> bool:
        """Tell whether the current connection may see the stored session ``sid`` (one of another
        tenant is answered like an unknown id)."""
        try:
            return await tenancy.sees(self.tenants, sid)
        except Exception:
            log.warning("tui: cannot read the tenant of session %s; it is not shown", sid, exc_info=True)
            return False

    async def claim(self, session: Session) -> None:
        """Claim a session the current connection just made for its tenant (a stored key's)."""
        if self.tenants is None:
            return
        try:
            await self.tenants.claim_new(session.id, tenancy.current())
        except Exception as exc:
            # Unclaimed, it would be the default tenant's: it is not handed out.
            await session.close(reason="closed")
            raise GatewayError(5000, f"could not record the session's tenant: {type(exc).__name__}") from exc

    async def close_session(self, sid: str, *, reason: str = "closed") -> bool:
        """Close a live session; False when it was not live."""
        live = self.lives.all.get(sid)
        if live is None:
            return False
        if live.orphan_timer is not None:
            live.orphan_timer.cancel()
        session = live.session
        if reason == "closed":
            # Expire open questions as "closed" before the interrupt would call them "interrupted".
            self.kernel.pending_questions.close_where(lambda q: q.session_id == sid, "closed")
        running = [s.subagent_id for s in self.kernel.sessions.children.children(sid, active_only=True)]
        await session.close(reason="shutdown" if reason == "shutdown" else "closed")
        if running:
            # Closing stopped these children; their end never reaches the closed stream, so the
            # stored tree is written here, with them interrupted.
            from hermes_tui_gateway.methods_trees import auto_save

            await auto_save(self, sid, running)
        await live.stream.aclose()
        live.stream.end_open_tasks()
        self.last_seq[sid] = live.stream.seq
        if session.info().persisted:
            self.known_stored.add(sid)
        if self.lives.all.get(sid) is live:
            del self.lives[sid]
        return True

    def open_requests(self, live: Live) -> list[EventParams]:
        """Return the open questions as their original ``*.request`` params
        (docs/reference/tui-gateway.md#snapshot)."""
        from hermes_tui_gateway.encode import question_request

        by_id: dict[str, EventParams] = {}
        shown = live.stream.shown_seq
        for seq, params, _size in live.stream.ring:
            if str(params.get("type", "")).endswith(".request"):
                payload = params.get("payload") or {}
                if seq > shown:  # still waiting for the log: its number is no cursor yet
                    params = {key: value for key, value in params.items() if key != "seq"}
                by_id[str(payload.get("request_id"))] = cast("EventParams", params)
        out = []
        for q in live.session.open_questions():
            found = by_id.get(q.request_id)
            if found is None:
                type_, payload = question_request(q)
                found = {"type": type_, "session_id": live.session.id, "payload": dict(payload)}
            out.append(found)
        return out

    async def run_blocking(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run a blocking call on the worker pool (never on the loop)."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    async def shutdown(self) -> None:
        """Interrupt and close every live session, then stop the pool."""
        self.closing = True
        for sid in list(self.lives.all):
            try:
                await self.close_session(sid, reason="shutdown")
            except Exception:
                log.warning("tui: closing %s failed", sid, exc_info=True)
        self.pool.shutdown(wait=False, cancel_futures=True)


def _configured_verbose(kernel: Kernel) -> str:
    """Return ``display.verbose`` from ``config.toml`` (the default of new sessions), else ``all``."""
    store = kernel.store
    try:
        value = store.get("display.verbose") if store is not None else None
    except Exception:
        log.warning("tui: cannot read display.verbose", exc_info=True)
        value = None
    return value if value in VERBOSE else "all"


__all__ = ["Conn", "Gateway", "Live", "Params", "Result", "method_modules"]
