"""One ACP connection: client capabilities, live sessions, and the peer's three hooks.

``fast_path`` answers ``initialize`` from static data; ``prepare`` registers prompts and
cancellations synchronously, before the next frame is read (docs/reference/acp.md#inbound-dispatch trap 5);
``dispatch`` hands everything else to ``jsonrpcserver`` (imported on first use) with an explicit table.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from hermes_acp.state import AcpSession, Ticket
from hermes_acp.static import ClientCaps, initialize_result
from hermes_core import __version__
from hermes_core.rpc import current_request

if TYPE_CHECKING:
    from hermes_acp.settings import AcpSettings
    from hermes_core import Kernel, TransportContext
    from hermes_core.rpc import RpcPeer

log = logging.getLogger("hermes_acp")


class AcpConnection:
    """State shared by every handler of one ``hermes acp`` process."""

    def __init__(self, ctx: TransportContext[AcpSettings]) -> None:
        """Create the connection state; the peer is attached right after.

        :param ctx: the transport context.
        """
        self.ctx = ctx
        self.kernel: Kernel = ctx.kernel
        self.peer: RpcPeer | None = None
        self.caps = ClientCaps()
        self.sessions: dict[str, AcpSession] = {}
        self.prompts: dict[Any, list[tuple[AcpSession, Ticket]]] = {}
        self.initialized = asyncio.Event()
        #: Called once with this connection when the first request finds the kernel ready
        #: (arms a scenario's faults, hermes_acp.faults).
        self.on_ready: Callable[[AcpConnection], None] | None = None
        self._dispatch: Any = None
        self._watchers: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ helpers

    @property
    def settings(self) -> AcpSettings:
        """The validated ``[acp]`` settings (available once the kernel is ready)."""
        settings: AcpSettings | None = self.ctx.settings  # None before the kernel is ready
        if settings is None:
            from hermes_acp.settings import AcpSettings

            settings = AcpSettings()
        return settings

    async def wait_ready(self) -> None:
        """Wait until the kernel has started (raises its start-up error).

        Every request but ``initialize`` waits here before it answers or sends anything, so
        :attr:`on_ready` runs before the first frame that is not the ``initialize`` response.
        """
        await self.ctx.ready
        hook, self.on_ready = self.on_ready, None
        if hook is not None:
            hook(self)

    def busy(self) -> bool:
        """Whether a prompt of a live session is still unanswered (its turn may be running)."""
        return any(not s.closed and (s.tickets or s.core.busy) for s in self.sessions.values())

    def update(self, session_id: str, update: Mapping[str, Any]) -> None:
        """Send one ``session/update`` notification.

        :param session_id: the session.
        :param update: the update object (with ``sessionUpdate``).
        """
        assert self.peer is not None
        self.peer.notify("session/update", {"sessionId": session_id, "update": dict(update)})

    def session(self, session_id: Any) -> AcpSession:
        """Return the live ACP session or raise ``-32002``.

        :param session_id: the id from the params.
        :returns: the session.
        :raises RpcError: not live here.
        """
        from hermes_acp.errors import not_found

        acp_session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if acp_session is None or acp_session.closed:
            raise not_found(session_id)
        return acp_session

    # ------------------------------------------------------------------ peer hooks

    def mcp_loaded(self) -> bool:
        """Whether the ``mcp`` plugin loaded, so editor MCP servers can be started."""
        return any(record.name == "mcp" and not record.failed for record in self.kernel.registry.plugins)

    def fast_path(self, message: dict[str, Any]) -> Mapping[str, Any] | None:
        """Answer ``initialize`` from static data (docs/reference/acp.md#start-up); nothing else.

        :param message: the normalised request.
        :returns: the response, or ``None`` to go on to ``prepare`` + ``dispatch``.
        """
        if message["method"] != "initialize":
            return None
        result, caps = initialize_result(message["params"], __version__, mcp_loaded=self.mcp_loaded())
        self.caps = caps
        self.initialized.set()
        return {"result": result}

    def prepare(self, message: dict[str, Any]) -> None:
        """Register turn control synchronously, before the next frame is read.

        :param message: the normalised request or notification.
        """
        method = message["method"]
        params = message["params"]
        if method == "session/prompt" and "id" in message:
            acp_session = self._live(params.get("sessionId"))
            if acp_session is not None:
                ticket = acp_session.new_ticket(message["id"])
                ctx = current_request()
                if ctx is not None:
                    ctx.state["ticket"] = ticket
                    ctx.state["acp_session"] = acp_session
                key = _id_key(message["id"])
                self.prompts.setdefault(key, []).append((acp_session, ticket))
        elif method == "session/cancel":
            acp_session = self._live(params.get("sessionId"))
            if acp_session is not None:
                acp_session.cancel_tickets()
        elif method == "$/cancel_request":
            for acp_session, _ticket in self.prompts.get(_id_key(params.get("requestId")), []):
                acp_session.cancel_tickets()

    async def dispatch(self, message: dict[str, Any]) -> Mapping[str, Any] | None:
        """Hand a request to ``jsonrpcserver`` with the explicit method table.

        :param message: the normalised request.
        :returns: the serialisable response, or ``None`` for a notification.
        """
        if self._dispatch is None:
            from hermes_acp.methods import dispatch

            self._dispatch = dispatch
        response: Mapping[str, Any] | None = await self._dispatch(self, message)
        return response

    def watch(self, acp_session: AcpSession) -> None:
        """Forward session-level events that arrive outside turns (a refined title,
        docs/reference/acp.md#end-of-a-turn).

        :param acp_session: the session to watch until it closes.
        """
        subscription = acp_session.core.subscribe()

        async def forward() -> None:
            from datetime import UTC, datetime

            from hermes_core import TitleChanged

            async for event in subscription:
                if isinstance(event, TitleChanged) and event.origin == "refined" and not acp_session.closed:
                    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                    update = {
                        "sessionUpdate": "session_info_update",
                        "title": event.title,
                        "updatedAt": stamp,
                    }
                    self.update(acp_session.id, update)

        task = asyncio.create_task(forward(), name=f"hermes-acp-watch-{acp_session.id}")
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    def background(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``work`` as a task the connection keeps alive until it ends or the connection shuts
        down (:meth:`cancel_background`).

        :param work: the coroutine.
        :param name: the task's name.
        """
        task = asyncio.create_task(work, name=name)
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    def cancel_background(self) -> None:
        """Cancel the background tasks still running (at shutdown)."""
        for task in list(self._watchers):
            task.cancel()

    def forget_prompt(self, request_id: Any, ticket: Ticket) -> None:
        """Drop a finished prompt from the ``$/cancel_request`` table.

        :param request_id: its inbound id.
        :param ticket: its ticket.
        """
        key = _id_key(request_id)
        entries = [e for e in self.prompts.get(key, []) if e[1] is not ticket]
        if entries:
            self.prompts[key] = entries
        else:
            self.prompts.pop(key, None)

    def _live(self, session_id: Any) -> AcpSession | None:
        acp_session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        return None if acp_session is None or acp_session.closed else acp_session


def _id_key(request_id: Any) -> tuple[str, Any]:
    """Key an id by JSON type, so ``1`` and ``"1"`` (and ``true``) stay distinct.

    :param request_id: an id from the wire.
    :returns: a hashable key.
    """
    try:
        hash(request_id)
    except TypeError:
        return ("unhashable", repr(request_id))
    return (type(request_id).__name__, request_id)
