"""Running one ``POST /v1/responses`` turn (docs/reference/api-server.md#responses): the whole
object, its stream events, or a background response; its record is saved when the turn ends."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from hermes_api_server.errors import ApiError
from hermes_api_server.http_util import session_headers
from hermes_api_server.response_builder import ResponseBuilder
from hermes_api_server.response_cancel import LiveResponse
from hermes_api_server.response_events import StreamEvent
from hermes_api_server.response_target import Target, open_target
from hermes_api_server.sse import ClientGone, SseWriter
from hermes_api_server.turns import EventPump, abandon, image_warning, stored_first, submit_turn
from hermes_core import EventLogStopped, TurnCompleted

log = logging.getLogger("hermes.api.responses")

if TYPE_CHECKING:
    from hermes_api_server.convert import Conversation
    from hermes_api_server.model_select import ModelChoice
    from hermes_api_server.response_background import Frames
    from hermes_api_server.response_lease import OwnerLease
    from hermes_api_server.state import ServerState
    from hermes_core import Session, Turn


class ResponseJob:
    """One ``POST /v1/responses`` turn: answered whole, streamed, or run in the background."""

    def __init__(
        self,
        state: ServerState,
        who: str,
        conv: Conversation,
        choice: ModelChoice,
        target: Target,
        base: dict[str, Any],
        store: bool,
        conversation: str | None,
        channel: str | None,
        workspace: Path | None,
        items: list[dict[str, Any]],
    ) -> None:
        self.state = state
        self.items = items
        self.who = who
        self.conv = conv
        self.choice = choice
        self.target = target
        self.store = store
        self.conversation = conversation
        self.channel = channel
        self.workspace = workspace
        self.builder = ResponseBuilder(
            base, show_reasoning=state.settings.show_reasoning, redact=state.kernel.redactor
        )
        self.live = LiveResponse(who, self.builder)
        #: A background response's place in the event log (stored with it).
        self.log_entry: dict[str, Any] | None = None

    @contextlib.contextmanager
    def _running(self) -> Iterator[None]:
        """Count the turn and make the response reachable by a cancel while it runs."""
        state = self.state
        state.active_turns += 1
        state.live_responses[self.builder.id] = self.live
        try:
            yield
        finally:
            state.active_turns -= 1
            state.live_responses.pop(self.builder.id, None)
            self.live.finished.set()

    def _settle_status(self, done: TurnCompleted | None) -> None:
        """Mark a turn a cancel stopped as ``cancelled``, and one without an outcome (its reader
        left) as interrupted; a turn that ended on its own keeps its status."""
        stopped = done is None or done.outcome.status == "interrupted"
        if self.live.cancel_requested and stopped:
            self.builder.cancelled()
        elif done is None:
            self.builder.interrupted()

    def _log_stopped(self, stopped: EventLogStopped, shown: int) -> None:
        """Fail a background response whose session's log stopped below events it had yet to
        show; its stream, rebuilt from the log, keeps the ``shown`` events it had then."""
        log.warning("background response %s: %s", self.builder.id, stopped)
        self.builder.cut_off(self.state.kernel.redactor(str(stopped)), "storage_error", shown=shown)
        if self.log_entry is not None:
            self.log_entry["events"] = shown

    async def _submit(self, session: Session) -> Turn:
        instructions = self.builder.base["instructions"]
        system = "\n".join(s for s in (instructions, self.conv.system) if s)
        if system and system != session.record.system_overlay:
            await session.set_system_overlay(system)
        model_ref, source = self.choice.resolved_for(session)
        self.model_ref = model_ref
        self.warning = await image_warning(
            self.state.kernel, self.choice.resolved or model_ref, self.conv.parts
        )
        self.builder.hermes = {"session_id": session.id, "model": model_ref, "model_source": source}
        turn = await submit_turn(session, self.conv, self.choice, self.who)
        self.live.attach(session, turn)
        return turn

    def _headers(self, session_id: str) -> dict[str, str]:
        headers = session_headers(session_id, self.channel, getattr(self, "model_ref", None))
        headers.update(getattr(self, "warning", {}))
        return headers

    async def _save(self, session: Session, done: TurnCompleted | None) -> None:
        if not self.store:
            return
        through = None
        if done is not None and done.assistant_row_id is not None:
            through = done.assistant_row_id
        elif session.rows:
            through = session.rows[-1].id
        obj = self.builder.snapshot()
        if self.log_entry is not None:
            from hermes_api_server.response_background import LOG_KEY

            obj[LOG_KEY] = self.log_entry
        await self.state.store.put_response(
            self.builder.id,
            self.who,
            session.id,
            through,
            self.builder.base["instructions"],
            obj,
            self.conversation,
            self.items,
        )

    async def complete(self) -> tuple[dict[str, Any], dict[str, str]]:
        """Run the turn and return the response object and headers."""
        state = self.state
        with self._running():
            async with open_target(state, self.who, self.target, self.channel, self.workspace) as session:
                turn = await self._submit(session)
                done: TurnCompleted | None = None
                try:
                    async for event in turn.events():
                        self.builder.feed(event)
                        if isinstance(event, TurnCompleted):
                            done = event
                finally:
                    await asyncio.shield(abandon(session, turn))
                self._settle_status(done)
                await asyncio.shield(self._save(session, done))
                headers = self._headers(session.id)
                if done is not None and "images_dropped" in done.warnings:
                    headers["X-Hermes-Warning"] = "images_dropped"
                return self.builder.snapshot(), headers

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """Run the turn and stream Responses events."""
        state = self.state
        with self._running():
            async with open_target(state, self.who, self.target, self.channel, self.workspace) as session:
                turn = await self._submit(session)
                pump = EventPump(turn)
                done: TurnCompleted | None = None
                writer = SseWriter(request, self._headers(session.id))
                try:
                    await writer.open()
                    await self._save(session, None)
                    await self._write(writer, self.builder.start())
                    async for batch in pump.batches():
                        if batch is None:
                            await writer.raw(": keepalive\n\n")
                            continue
                        frames = self.builder.feed_batch(batch)
                        for event in batch:
                            if isinstance(event, TurnCompleted):
                                done = event
                        await self._write(writer, frames)
                    self._settle_status(done)
                    await self._save(session, done)
                    await self._write(writer, [self.builder.terminal_event()])
                except ClientGone:
                    pass
                finally:
                    await pump.close()
                    if done is None:
                        await asyncio.shield(abandon(session, turn))
                        self._settle_status(None)
                        await asyncio.shield(self._save(session, None))
                return writer.response

    async def start_background(self) -> tuple[dict[str, Any], dict[str, str]]:
        """Start the turn in a task of this process and return the object as it stands once the
        prompt is queued (docs/reference/api-server.md#background-responses)."""
        from hermes_api_server.response_background import Frames

        self.builder.stable_ids = True
        self.live.frames = Frames()
        ready: asyncio.Future[dict[str, str]] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(self._background(ready), name=f"hermes-response-{self.builder.id}")
        self.state.turn_tasks.add(task)
        task.add_done_callback(self.state.turn_tasks.discard)
        headers = await ready
        snapshot = self.builder.snapshot()
        return snapshot, headers

    async def _background(self, ready: asyncio.Future[dict[str, str]]) -> None:
        from hermes_api_server.response_lease import hold

        state = self.state
        frames: Frames = self.live.frames
        done: TurnCompleted | None = None
        stopped: EventLogStopped | None = None
        lease: OwnerLease | None = None
        try:
            with self._running():
                async with open_target(state, self.who, self.target, self.channel, self.workspace) as session:
                    after = state.kernel.events.head(session.id)
                    turn = await self._submit(session)
                    self.log_entry = {
                        "after": after or 0,
                        "item_id": turn.item_id,
                        "base": dict(self.builder.base),
                    }
                    # Shared records: the liveness lease other instances read (before the
                    # object exists, so a stored running object always has one).
                    lease = await hold(state, self.builder.id, self.who)
                    if lease is not None:
                        lease.on_cancel = self._cancel_soon
                    await self._save(session, None)
                    frames.add(self.builder.start())
                    ready.set_result(self._headers(session.id))
                    pump = EventPump(turn)
                    try:
                        async for batch in pump.batches():
                            if not batch:
                                continue
                            out: list[StreamEvent] = []
                            for event in batch:
                                # One event at a time: the stream a read from the log rebuilds.
                                out.extend(self.builder.feed_batch([event]))
                                if isinstance(event, TurnCompleted):
                                    done = event
                            if out or done is not None:
                                # The terminal event follows the turn's end: stored first too.
                                try:
                                    await stored_first(state.kernel, session.id, batch)
                                except EventLogStopped as exc:
                                    stopped = exc  # never stored: not shown, the response fails
                                    break
                            if lease is not None and not await lease.vouched():
                                break  # settled elsewhere: show nothing more
                            frames.add(out)
                    finally:
                        await pump.close()
                        if done is None or stopped is not None:
                            await asyncio.shield(abandon(session, turn))
                        if stopped is not None:
                            self._log_stopped(stopped, len(frames.events))
                        else:
                            self._settle_status(done)
                        theirs = await asyncio.shield(self._commit(lease, session, done))
                        if theirs is None:
                            frames.add([self.builder.terminal_event()], end=True)
                        else:
                            await self._adopt(theirs, session.id, frames)
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                log.warning("background response %s failed", self.builder.id, exc_info=True)
            frames.add([], end=True)
        finally:
            if lease is not None:
                await lease.stop()
            if not ready.done():
                ready.set_exception(ApiError(500, "internal_error", "The response could not start"))

    async def _commit(
        self, lease: OwnerLease | None, session: Session, done: TurnCompleted | None
    ) -> dict[str, Any] | None:
        """Commit and store the end of a background response; return the object another
        instance settled it with instead (its lease was taken over), else None."""
        if lease is not None:
            from hermes_api_server.response_background import LOG_KEY

            final = self.builder.snapshot()
            if self.log_entry is not None:
                final[LOG_KEY] = self.log_entry
            theirs = await lease.commit(final)
            if theirs is not None:
                return theirs
        await self._save(session, done)
        return None

    def _cancel_soon(self) -> None:
        """Another instance asked to cancel this background response."""
        self.state.kernel.spawn(self.live.cancel(), name=f"hermes-response-cancel-{self.builder.id}")

    async def _adopt(self, theirs: dict[str, Any], session_id: str, frames: Frames) -> None:
        """End this process's stream with the ending another instance settled: the events it
        counted that were not shown here (read back from the log), then its terminal event."""
        from hermes_api_server.response_background import rebuild, terminal_of

        events: list[StreamEvent] = []
        try:
            _builder, events, _whole = await rebuild(self.state, {"object": theirs, "session_id": session_id})
        except Exception:
            log.warning("reading response %s back from the event log failed", self.builder.id, exc_info=True)
        rest = events[len(frames.events) :]
        frames.add([*rest, terminal_of(theirs, len(frames.events) + len(rest))], end=True)

    async def _write(self, writer: SseWriter, events: list[StreamEvent]) -> None:
        if not events:
            return
        from hermes_api_server.errors import dumps

        await writer.raw("".join(f"event: {e['type']}\ndata: {dumps(e)}\n\n" for e in events))
