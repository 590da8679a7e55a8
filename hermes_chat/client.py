"""The gateway session the chat is about: open it, keep the connection, recover after a drop.

:class:`ChatClient` knows the protocol (docs/protocols/tui-gateway.md) and nothing about the
screen. It delivers each session event once, in ``seq`` order, to a :class:`Listener`.

Recovery follows the guide's section 4. After a reconnect it first asks for the events after
the highest ``seq`` it delivered (``session.events.since``); when the session is no longer live
it resumes it and asks again. Only when the gateway cannot continue the numbering (a new
``replay_epoch``, a truncated ring, a numbering that restarted) does it hand the resumed
snapshot to :meth:`Listener.rebuilt`, which reconciles the screen from the stored transcript.
So a gateway whose event log survives a restart (same epoch, same numbering) is replayed from
the watermark with no change here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from hermes_chat.link import Connector, Frame, Link, LinkError
from hermes_chat.rpc import ConnectionLost, Rpc, RpcError

BACKOFF_S = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
READY_TIMEOUT_S = 120.0
# A spawned gateway that fails this many starts in a row is not going to come back by itself.
SPAWN_ATTEMPTS = 6


class Listener(Protocol):
    """What the client tells the screen."""

    def event(self, session_id: str, kind: str, payload: dict[str, Any], replayed: bool) -> None:
        """One event, in order, never twice (``session_id`` is ``""`` for global events)."""
        ...

    def connection(self, state: str, text: str) -> None:
        """The link changed: ``lost``, ``retrying``, ``back`` or ``note``."""
        ...

    def rebuilt(self, snapshot: dict[str, Any]) -> None:
        """The gateway could not replay: reconcile the screen with this resumed snapshot."""
        ...


class ChatClient:
    """One chat's connection to a gateway and the session it shows."""

    def __init__(
        self,
        connector: Connector,
        listener: Listener,
        *,
        cwd: str,
        cols: int = 80,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.connector = connector
        self.listener = listener
        self.cwd = cwd
        self.cols = cols
        self._sleep = sleep
        self.rpc: Rpc | None = None
        self.ready: dict[str, Any] = {}
        self.epoch: str | None = None
        self.previous_epoch: str | None = None
        self.session_id: str | None = None
        self.last_seq: dict[str, int] = {}
        self._held: dict[str, list[Frame]] = {}
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._pump: asyncio.Task[str] | None = None
        self.connected = asyncio.Event()
        self.closing = False

    # -- connecting --------------------------------------------------------------------------------

    async def connect(self) -> None:
        """Open the first link and wait for ``gateway.ready``.

        :raises LinkError: the gateway could not be reached or refused us.
        """
        await self._adopt(await self.connector.connect())

    async def _adopt(self, link: Link) -> None:
        self._ready = asyncio.get_running_loop().create_future()
        rpc = Rpc(link, self._on_event)
        pump = asyncio.create_task(rpc.pump(), name="hermes-chat-pump")
        ready = self._ready
        waited: set[asyncio.Future[Any]] = {ready, pump}
        await asyncio.wait(waited, timeout=READY_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            ready.cancel()
            if not pump.done():
                await link.close()
            reason = link.ended if pump.done() else "the gateway did not answer within 120 s"
            with contextlib.suppress(Exception):
                await pump
            raise LinkError(reason or "the gateway did not start", fatal=link.fatal)
        self.rpc, self._pump = rpc, pump
        self.ready = ready.result()
        self.previous_epoch, self.epoch = self.epoch, self.ready.get("replay_epoch")
        self.connected.set()

    async def call(self, method: str, **params: Any) -> Any:
        """Call a gateway method on the current link.

        :raises ConnectionLost: not connected right now (the caller may retry after ``back``).
        :raises RpcError: the gateway answered with an error.
        """
        rpc = self.rpc
        if rpc is None or rpc.closed or not self.connected.is_set():
            raise ConnectionLost("not connected to the gateway")
        return await rpc.call(method, params)

    async def close(self) -> None:
        """End the link (a spawned gateway stops; an attached one keeps the session)."""
        self.closing = True
        self.connected.clear()
        if self.rpc is not None:
            with contextlib.suppress(Exception):
                await self.rpc.link.close()
        if self._pump is not None:
            with contextlib.suppress(BaseException):
                await self._pump

    # -- the session -------------------------------------------------------------------------------

    async def open(
        self, *, resume: str | None = None, continue_here: bool = False, model: str | None = None
    ) -> dict[str, Any]:
        """Create, resume or continue the session; return its snapshot.

        :param resume: a session id or exact title.
        :param continue_here: resume the most recently active session of this folder.
        :param model: the model of a new session.
        :raises RpcError: 4007 no such session, 4002 unknown model, …
        """
        if continue_here and resume is None:
            listing = await self.call("session.list", limit=20, cwd=self.cwd)
            mine = [s for s in listing.get("sessions", []) if s.get("cwd", self.cwd) == self.cwd]
            if mine:
                resume = str(mine[0]["id"])
            else:
                self.listener.connection(
                    "note", "No earlier conversation in this folder; starting a new one."
                )
        if resume is not None:
            return await self.switch("session.resume", session_id=resume, cols=self.cols)
        params: dict[str, Any] = {"cols": self.cols, "cwd": self.cwd}
        if model:
            params["model"] = model
        try:
            return await self.switch("session.create", **params)
        except RpcError as exc:
            if exc.code != 4017:
                raise
            del params["cwd"]  # an attached gateway on another machine: use its own folder
            return await self.switch("session.create", **params)

    async def switch(self, method: str, **params: Any) -> dict[str, Any]:
        """Call a method that answers a snapshot and make that session the current one."""
        snapshot: dict[str, Any] = await self.call(method, **params)
        self.adopt(snapshot)
        return snapshot

    def adopt(self, snapshot: dict[str, Any]) -> None:
        """Make the session of a snapshot (from ``/new``, ``/branch``, ``/resume``) current."""
        sid = snapshot.get("session_id")
        if isinstance(sid, str) and sid:
            self.session_id = sid

    # -- events ------------------------------------------------------------------------------------

    def _on_event(self, params: Frame) -> None:
        kind = params.get("type")
        if kind == "gateway.ready":
            if self._ready is not None and not self._ready.done():
                payload = params.get("payload")
                self._ready.set_result(payload if isinstance(payload, dict) else {})
            return
        sid = params.get("session_id")
        if isinstance(sid, str) and sid in self._held:
            self._held[sid].append(params)
            return
        self._deliver(params, replayed=False)

    def _deliver(self, params: Frame, *, replayed: bool) -> None:
        sid = params.get("session_id")
        sid = sid if isinstance(sid, str) else ""
        seq = params.get("seq")
        if sid and isinstance(seq, int):
            if seq <= self.last_seq.get(sid, 0):
                return  # already shown (a replay overlapping live delivery)
            self.last_seq[sid] = seq
        payload = params.get("payload")
        self.listener.event(
            sid, str(params.get("type", "")), payload if isinstance(payload, dict) else {}, replayed
        )

    def _release(self, sid: str) -> None:
        for params in self._held.pop(sid, []):
            self._deliver(params, replayed=False)

    # -- staying connected -------------------------------------------------------------------------

    async def supervise(self) -> None:
        """Watch the link; when it ends, say so, reconnect with backoff and recover the session.

        Returns when :meth:`close` was called.

        :raises LinkError: the gateway refused us, or a spawned one keeps failing to start.
        """
        while not self.closing:
            pump = self._pump
            if pump is None:
                return
            reason = await pump
            self.connected.clear()
            if self.closing:
                return
            link = self.rpc.link if self.rpc is not None else None
            if link is not None and link.fatal:
                raise LinkError(reason, fatal=True)
            self.listener.connection("lost", reason)
            await self._reconnect()

    async def _reconnect(self) -> None:
        failures = 0
        while not self.closing:
            delay = BACKOFF_S[min(failures, len(BACKOFF_S) - 1)]
            self.listener.connection("retrying", f"reconnecting in {delay:g} s")
            await self._sleep(delay)
            if self.closing:
                return
            try:
                await self._adopt(await self.connector.connect())
                how = await self._recover()
            except LinkError as exc:
                if exc.fatal:
                    raise
                failures += 1
                if self.connector.kind == "spawned" and failures >= SPAWN_ATTEMPTS:
                    raise LinkError(
                        f"the gateway failed to start {failures} times: {exc}", fatal=True
                    ) from None
                self.listener.connection("note", str(exc))
                continue
            except ConnectionLost as exc:
                failures += 1
                self.listener.connection("note", str(exc))
                continue
            self.listener.connection("back", how)
            return

    async def _recover(self) -> str:
        """Bring the current session back on the new link; say how."""
        sid = self.session_id
        if not sid:
            return "reconnected"
        same = self.epoch is not None and self.epoch == self.previous_epoch
        if not same:
            self.last_seq.clear()  # positions of another gateway life mean nothing here
        try:
            if same and await self._replay(sid):
                return "reconnected; replayed from the last event shown"
            self._held.setdefault(sid, [])
            try:
                snapshot = await self.call("session.resume", session_id=sid, cols=self.cols)
            except RpcError as exc:
                raise LinkError(f"could not resume the session: {exc.message}", fatal=True) from None
            if same and await self._replay(sid):
                return "reconnected; session resumed and replayed from the last event shown"
        except BaseException:
            self._held.pop(sid, None)
            raise
        # The numbering restarted: what arrived during the resume is newer than its snapshot.
        self.last_seq[sid] = 0
        self.listener.rebuilt(snapshot)
        self._release(sid)
        return "reconnected; session resumed from the stored transcript"

    async def _replay(self, sid: str) -> bool:
        """Ask for every event after the watermark; True when they continue it with no gap."""
        last = self.last_seq.get(sid, 0)
        self._held.setdefault(sid, [])
        try:
            result = await self.call("session.events.since", session_id=sid, last_seen=last)
        except RpcError as exc:
            if exc.code == 4001:
                return False  # not live here (any more): resume it first
            raise LinkError(f"could not replay the session: {exc.message}") from None
        latest = result.get("latest_seq")
        if result.get("truncated") or not isinstance(latest, int) or latest < last:
            return False
        for params in result.get("events") or []:
            if isinstance(params, dict):
                self._deliver(params, replayed=True)
        self._release(sid)
        return True
