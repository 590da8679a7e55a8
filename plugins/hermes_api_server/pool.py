"""Open sessions only while an API turn of theirs runs or waits (docs/reference/api-server.md#session-headers,
docs/reference/core.md#writer-lease)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_api_server.errors import ApiError
from hermes_core import InvalidValue, SeedMessage, SessionBusy, SessionInUse, WorkspaceError, WorkspaceProblem
from hermes_core import check_workspace as core_check_workspace

if TYPE_CHECKING:
    from hermes_api_server.session_owners import SessionOwners
    from hermes_core import Kernel, RecordClaim, Session

log = logging.getLogger("hermes.api")


def in_use_error() -> ApiError:
    """Return the 409 for a session whose lease another process holds."""
    return ApiError(409, "session_in_use", "The session is open in another Hermes process")


def check_workspace(value: str, roots: Sequence[str], param: str) -> Path:
    """Validate a requested workspace: an existing directory inside one of ``roots``.

    :raises ApiError: 400 ``invalid_workspace``.
    """
    try:
        return core_check_workspace(value, field=param, roots=roots)
    except WorkspaceError as exc:
        message = "The workspace must be a directory inside workspace_roots"
        if exc.problem is WorkspaceProblem.NOT_A_PATH:
            message = "The workspace is not a valid path: it contains a NUL character"
        raise ApiError(400, "invalid_workspace", message, param=param) from None


# Opening a session ends in one storage round trip whose answers come back in a batch, and each
# woken request then runs ~0.3 ms of set-up before it next waits: 200 streams started together
# made single loop iterations of 35-54 ms (measured with a 2 ms timer probe), stalling every
# running stream. With at most 16 opens in flight the longest stall was 15-24 ms and the p99
# gap between a running stream's events fell from 25-63 ms to 28-33 ms. The price is paid by a
# burst's own requests: at 50 at once, the p95 time to first token rose from ~70 ms to ~90 ms.
OPENING_AT_ONCE = 16


class SessionPool:
    """Reference-counted live sessions; the last user closes the session and its lease."""

    def __init__(
        self, kernel: Kernel, workspaces: Path, profile: str, default_workspace: Path | None = None
    ) -> None:
        self.kernel = kernel
        self.workspaces = workspaces
        self.default_workspace = default_workspace  # None: each new session gets its own folder
        self.profile = profile
        self._users: dict[str, int] = {}
        self.browser: Any = None  # the BrowserHub while browser control is enabled
        self.browser_tools: frozenset[str] = frozenset()
        # Weak values: a lock lives while someone holds or awaits it, so the map never grows.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        # How many sessions may be opening at once (see OPENING_AT_ONCE).
        self._opening = asyncio.Semaphore(OPENING_AT_ONCE)
        #: Who may open which session (tenants); None in unit tests without records.
        self.owners: SessionOwners | None = None
        # Released sessions waiting for their background children to end before closing.
        self._waiting: set[asyncio.Task[None]] = set()

    def _lock(self, session_id: str) -> asyncio.Lock:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        return lock

    async def exists(self, session_id: str) -> bool:
        """Tell whether storage or this process knows the session."""
        return await self.kernel.sessions.exists(session_id)

    async def _open(
        self,
        session_id: str,
        *,
        owner: str,
        channel_key: str | None,
        workspace: Path | None,
        seed: Sequence[SeedMessage],
        new: bool = False,
        claims: Sequence[RecordClaim] = (),
    ) -> Session:
        live = self.kernel.live_session(session_id)
        if live is not None and live.lineage is None:
            return live
        # A running delegated child is refused by open_session (SessionBusy "subagent").
        # A new session works in the requested workspace, else the server's (--workspace), else
        # a folder named after its id (made off the loop while storage is read); a stored one
        # ignores ``cwd``.
        chosen = workspace or self.default_workspace
        cwd = chosen or self.workspaces / session_id
        try:
            session = await self.kernel.open_session(
                session_id,
                source="api",
                owner=owner,
                cwd=cwd,
                profile=self.profile,
                channel_key=channel_key,
                seed=seed,
                create_cwd=chosen is None,
                new=new,
                claims=claims,
            )
            if not new and workspace is None and session.cwd != cwd and not session.cwd.is_dir():
                await self._move_in(session, cwd)
            return session
        except SessionInUse:
            raise in_use_error() from None
        except SessionBusy as exc:
            raise ApiError(409, "session_in_use", str(exc)) from None
        except InvalidValue as exc:
            if exc.field == "cwd":
                # Only the folder this server makes can be missing here: a server-side fault.
                log.error("cannot prepare the workspace of session %s: %s", session_id, exc)
                raise ApiError(
                    500, "internal_error", "The session's workspace folder cannot be made"
                ) from None
            raise ApiError(400, "invalid_session_id", str(exc), param="session_id") from None

    async def _move_in(self, session: Session, cwd: Path) -> None:
        """Give a stored session whose folder is not on this host (another instance made it) this
        instance's folder for it, so its tools never write into a path of another machine."""
        loop = asyncio.get_running_loop()

        def prepare() -> Path:
            with contextlib.suppress(OSError):
                cwd.mkdir(parents=True, exist_ok=True)
            return core_check_workspace(cwd)

        old = session.cwd
        await session.set_cwd(await loop.run_in_executor(self.kernel.executor, prepare))
        log.warning(
            "session %s: its workspace %s is not on this instance; it continues in %s "
            "(give every instance the same shared --workspace to keep files between them)",
            session.id,
            old,
            cwd,
        )

    @contextlib.asynccontextmanager
    async def use(
        self,
        session_id: str,
        *,
        owner: str,
        channel_key: str | None = None,
        workspace: Path | None = None,
        seed: Sequence[SeedMessage] = (),
        new: bool = False,
    ) -> AsyncIterator[Session]:
        """Hold a session open (and its lease) for the duration of the block.

        :param new: the id was made for this request (a new stateless chat): storage is not
            read for it.
        """
        async with self._lock(session_id):
            claim = None
            if self.owners is not None and new:
                # Nobody else can know a new id: its tenant's claim is stored with the session
                # by its first write (or beside the lease taken for the id's reveal).
                claim = self.owners.claim_new(session_id, owner)
            claims = (claim,) if claim is not None else ()
            if self.owners is not None and claim is None:
                await self.owners.check(session_id, owner, self.exists, new=new)
            # A session this pool already holds is live: opening it again waits on nothing.
            gate = contextlib.nullcontext() if session_id in self._users else self._opening
            async with gate:
                session = await self._open(
                    session_id,
                    owner=owner,
                    channel_key=channel_key,
                    workspace=workspace,
                    seed=seed,
                    new=new,
                    claims=claims,
                )
            self._users[session_id] = self._users.get(session_id, 0) + 1
        try:
            if self.browser_tools:
                from hermes_api_server.browser_control import hub_owner

                # Browser tools are visible only while this principal has a controller attached.
                hub_owner[session.id] = owner
                session.set_tool_filter(self.browser_tools - self.browser.granted(owner, session.id))
            if workspace is not None and session.cwd != workspace:
                await session.set_cwd(workspace)
            yield session
        finally:
            await asyncio.shield(self._release(session_id, session))

    async def _release(self, session_id: str, session: Session) -> None:
        async with self._lock(session_id):
            left = self._users.get(session_id, 1) - 1
            if left > 0:
                self._users[session_id] = left
                return
            self._users.pop(session_id, None)
            if self.browser_tools:
                from hermes_api_server.browser_control import hub_owner

                hub_owner.pop(session_id, None)
            if self.kernel.sessions.children.children(session_id, active_only=True):
                # Background children outlive the request that started them (and closing the
                # parent would stop them): the session closes once the last of them ends.
                task = asyncio.ensure_future(self._close_after_children(session_id, session))
                self._waiting.add(task)
                task.add_done_callback(self._waiting.discard)
                return
            if not session.busy:
                await self._close(session_id, session)

    async def _close(self, session_id: str, session: Session) -> None:
        try:
            await session.close()
        except Exception:
            log.warning("closing session %s failed", session_id, exc_info=True)

    async def _close_after_children(self, session_id: str, session: Session) -> None:
        """Close a released session once its running children have ended, unless it was reused."""
        events = session.subscribe()  # before the check: a child ending in between still wakes us
        try:
            while self.kernel.sessions.children.children(session_id, active_only=True):
                if await anext(events, None) is None:
                    return  # the session was closed meanwhile
        finally:
            events.close()
        async with self._lock(session_id):
            if session_id not in self._users and not session.busy:
                await self._close(session_id, session)

    def adopt(self, session: Session) -> None:
        """Count a session opened elsewhere (a fork) as one user of the pool."""
        self._users[session.id] = self._users.get(session.id, 0) + 1

    async def release(self, session: Session) -> None:
        """Release a session counted with :meth:`adopt`."""
        await self._release(session.id, session)
