"""``POST /v1/responses``, ``GET`` and ``DELETE /v1/responses/{id}``
(docs/reference/api-server.md#responses); listing a response's input items and cancelling it live
in :mod:`hermes_api_server.response_input` and :mod:`hermes_api_server.response_cancel`."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import logging
import secrets
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from hermes_api_server.convert import response_items, seed_history
from hermes_api_server.errors import ApiError, invalid, json_response
from hermes_api_server.http_util import (
    check_metadata,
    fingerprint,
    header_session_id,
    header_session_key,
    idempotency_key,
    parse_bool,
    read_json,
    session_headers,
    strict_bool,
)
from hermes_api_server.model_select import choose_model
from hermes_api_server.pool import check_workspace, in_use_error
from hermes_api_server.response_builder import ResponseBuilder
from hermes_api_server.response_cancel import LiveResponse
from hermes_api_server.response_events import StreamEvent
from hermes_api_server.response_input import input_items
from hermes_api_server.sse import ClientGone, SseWriter
from hermes_api_server.state import get_state, principal
from hermes_api_server.turns import EventPump, abandon, image_warning, submit_turn
from hermes_core import SeedMessage, SessionInUse, TurnCompleted

log = logging.getLogger("hermes.api.responses")

if TYPE_CHECKING:
    from hermes_api_server.convert import Conversation
    from hermes_api_server.model_select import ModelChoice
    from hermes_api_server.state import ServerState
    from hermes_core import Session, Turn


def mint_session_id() -> str:
    """Return a fresh session id in the core's ``YYYYMMDD_HHMMSS_xxxxxx`` shape."""
    now = _dt.datetime.now(_dt.UTC)
    return f"{now:%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"


def not_found(response_id: str) -> ApiError:
    """Return the 404 of an unknown, foreign or gone response."""
    return ApiError(
        404, "response_not_found", f"Response not found: {response_id}", param="previous_response_id"
    )


@dataclass(slots=True)
class Target:
    """Where a Responses or run turn runs."""

    session_id: str
    fork_from: int | None = None  # chain from an older turn: fork up to this row
    instructions: str | None = None
    seed: list[SeedMessage] = field(default_factory=list)


async def chained_target(state: ServerState, who: str, response_id: str) -> Target:
    """Resolve ``previous_response_id`` into its session (404 when unknown or gone)."""
    record = await state.store.get_response(who, response_id)
    if record is None or not await state.pool.exists(record["session_id"]):
        raise not_found(response_id)
    return Target(record["session_id"], record["through_row_id"], record["instructions"])


@contextlib.asynccontextmanager
async def open_target(
    state: ServerState, who: str, target: Target, channel: str | None, workspace: Path | None
) -> AsyncIterator[Session]:
    """Open the target session; fork it when the chained turn is not its newest."""
    async with state.pool.use(
        target.session_id, owner=who, channel_key=channel, workspace=workspace, seed=target.seed
    ) as session:
        through = target.fork_from
        newest = session.rows[-1].id if session.rows else None
        if through is None or newest is None or through >= newest or session.busy:
            yield session
            return
        try:
            fork = await session.branch(owner=who, up_to_row_id=through)
        except SessionInUse:
            raise in_use_error() from None
    state.pool.adopt(fork)
    try:
        yield fork
    finally:
        await asyncio.shield(state.pool.release(fork))


async def create_response(request: web.Request) -> web.StreamResponse:
    """Handle ``POST /v1/responses``."""
    state = get_state(request)
    who = principal(request)
    body = await read_json(request)
    conv = response_items(body.get("input"))
    items = input_items(body.get("input"), state.kernel.redactor)
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise invalid("instructions must be a string", "instructions")
    background = strict_bool(body.get("background"), "background", False)
    store = strict_bool(body.get("store"), "store", True)
    if background and not store:
        raise invalid("background mode needs store: a background response is stored", "background")
    stream = parse_bool(body.get("stream"), "stream")
    metadata = check_metadata(body.get("metadata"))
    previous = body.get("previous_response_id")
    if previous is not None and (not isinstance(previous, str) or not previous):
        raise invalid("previous_response_id must be a string", "previous_response_id")
    conversation = body.get("conversation")
    if isinstance(conversation, dict):
        conversation = conversation.get("id")
        if not isinstance(conversation, str) or not conversation:
            raise invalid("conversation must be a name or an object with a string id", "conversation")
    elif conversation is not None and (not isinstance(conversation, str) or not conversation):
        raise invalid("conversation must be a name or an object with a string id", "conversation")
    history_given = body.get("conversation_history") is not None
    seed = seed_history(body.get("conversation_history"), "conversation_history")
    header_id = header_session_id(request)
    channel = header_session_key(request)
    sources = [previous is not None, conversation is not None, history_given]
    if (previous is not None and conversation is not None) or (history_given and sum(sources) > 1):
        raise ApiError(
            400, "conflicting_parameters", "Combine at most one history source", param="previous_response_id"
        )
    if header_id and any(sources):
        raise ApiError(
            400,
            "conflicting_parameters",
            "X-Hermes-Session-Id conflicts with chaining",
            param="X-Hermes-Session-Id",
        )
    choice = await choose_model(state.kernel, state.settings, body, always_resolve=False)
    workspace_value = request.headers.get("X-Hermes-Workspace")
    workspace = (
        check_workspace(workspace_value, state.workspace_roots(), "X-Hermes-Workspace")
        if workspace_value
        else None
    )
    key = None if stream else idempotency_key(request)
    if previous is not None:
        target = await chained_target(state, who, previous)
    elif conversation is not None:
        latest = await state.store.conversation(who, conversation)
        target = await chained_target(state, who, latest) if latest else Target(mint_session_id())
    elif header_id:
        target = Target(header_id)
    else:
        found = (
            await state.kernel.sessions.latest_for_channel(channel) if channel and not history_given else None
        )
        target = Target(found or mint_session_id())
    if not await state.pool.exists(target.session_id):
        target.seed = [*seed, *conv.history]
    state.admit()
    base: dict[str, Any] = {
        "model": choice.requested,
        "previous_response_id": previous,
        "conversation": {"id": conversation} if conversation else None,
        "instructions": instructions if instructions is not None else target.instructions,
        "store": store,
        "metadata": metadata,
        "tools": [],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
    }
    if background:
        base["background"] = True
    job = _ResponseJob(state, who, conv, choice, target, base, store, conversation, channel, workspace, items)
    if background:
        from hermes_api_server.response_background import follow, public

        obj, headers = await job.start_background()
        if stream:
            assert job.live.frames is not None
            return await follow(request, job.live.frames, -1, headers)
        return json_response(public(obj), headers=headers)
    if stream:
        return await job.stream(request)
    if key is None:
        payload, headers = await job.complete()
        return json_response(payload, headers=headers)
    fp = fingerprint({"body": body, "session_key": channel})
    (payload, headers), replayed = await state.idempotency.run((who, "responses", key), fp, job.complete)
    headers = dict(headers)
    if replayed:
        headers["Idempotency-Replayed"] = "true"
    return json_response(payload, headers=headers)


class _ResponseJob:
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
        from hermes_api_server.response_background import Frames

        state = self.state
        frames: Frames = self.live.frames
        done: TurnCompleted | None = None
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
                            last = max(event.seq for event in batch)
                            if out and last:
                                await state.kernel.events.durable(session.id, last)
                            frames.add(out)
                    finally:
                        await pump.close()
                        if done is None:
                            await asyncio.shield(abandon(session, turn))
                        self._settle_status(done)
                        await asyncio.shield(self._save(session, done))
                        frames.add([self.builder.terminal_event()], end=True)
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                log.warning("background response %s failed", self.builder.id, exc_info=True)
            frames.add([], end=True)
        finally:
            if not ready.done():
                ready.set_exception(ApiError(500, "internal_error", "The response could not start"))

    async def _write(self, writer: SseWriter, events: list[StreamEvent]) -> None:
        if not events:
            return
        from hermes_api_server.errors import dumps

        await writer.raw("".join(f"event: {e['type']}\ndata: {dumps(e)}\n\n" for e in events))


async def retrieve_response(request: web.Request) -> web.StreamResponse:
    """Return a stored response object."""
    state = get_state(request)
    response_id = request.match_info["response_id"]
    from hermes_api_server.response_background import public, settle_cut_off, stream_stored, unsettled

    who = principal(request)
    stream = parse_bool(request.query.get("stream"), "stream")
    if stream:
        return await stream_stored(request, state, who, response_id)
    if request.query.get("starting_after") is not None:
        from hermes_api_server.response_background import parse_starting_after

        parse_starting_after(request.query.get("starting_after"))
    live = state.live_responses.get(response_id)
    if live is not None and live.principal == who and live.frames is not None:
        return json_response(live.builder.snapshot())  # a background response, still running
    record = await state.store.get_response(who, response_id)
    if record is None:
        raise ApiError(404, "response_not_found", f"Response not found: {response_id}", param="response_id")
    if unsettled(state, record):
        return json_response(public(await settle_cut_off(state, who, record)))
    return json_response(public(record["object"]))


async def delete_response(request: web.Request) -> web.Response:
    """Delete a stored response (not its session's transcript)."""
    state = get_state(request)
    response_id = request.match_info["response_id"]
    if not await state.store.delete_response(principal(request), response_id):
        raise ApiError(404, "response_not_found", f"Response not found: {response_id}", param="response_id")
    return json_response({"id": response_id, "object": "response", "deleted": True})
