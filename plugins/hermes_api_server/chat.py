"""``POST /v1/chat/completions``: JSON and SSE (docs/reference/api-server.md#chat-completions)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from hermes_api_server.chat_session import chat_session, is_meta_request
from hermes_api_server.chat_stream import ChatChunks
from hermes_api_server.convert import chat_conversation
from hermes_api_server.errors import ApiError, invalid, json_response
from hermes_api_server.http_util import (
    fingerprint,
    header_session_key,
    idempotency_key,
    parse_bool,
    read_json,
    session_headers,
)
from hermes_api_server.model_select import choose_model
from hermes_api_server.outcomes import chat_finish, hermes_block
from hermes_api_server.pool import check_workspace
from hermes_api_server.sse import ClientGone, SseWriter
from hermes_api_server.state import get_state, principal
from hermes_api_server.turns import EventPump, abandon, image_warning, submit_turn
from hermes_core import TurnCompleted

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hermes_api_server.chat_session import ChatSession
    from hermes_api_server.convert import Conversation
    from hermes_api_server.model_select import ModelChoice
    from hermes_api_server.state import ServerState
    from hermes_core import Session, Turn

_ids = random.Random()
log = logging.getLogger("hermes.api")


async def create_chat_completion(request: web.Request) -> web.StreamResponse:
    """Handle ``POST /v1/chat/completions``."""
    state = get_state(request)
    who = principal(request)
    body = await read_json(request)
    conv = chat_conversation(body.get("messages"))
    stream = parse_bool(body.get("stream"), "stream")
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or n != 1):
        raise invalid("n must be 1", "n")
    options = body.get("stream_options")
    include_usage = stream and isinstance(options, dict) and options.get("include_usage") is True
    choice = await choose_model(state.kernel, state.settings, body, always_resolve=False)
    settings = state.settings
    target = chat_session(request, who, settings.chat_id_headers, settings.user_id_headers)
    channel = header_session_key(request)
    workspace_value = request.headers.get("X-Hermes-Workspace")
    workspace = (
        check_workspace(workspace_value, state.workspace_roots(), "X-Hermes-Workspace")
        if workspace_value
        else None
    )
    key = None if stream else idempotency_key(request)
    if not stream and settings.meta_requests == "detect" and is_meta_request(conv.text):
        # Whatever session the request names: a task prompt is never a turn of it.
        from hermes_api_server.chat_meta import meta_request

        state.admit()
        return await meta_request(state, conv, choice, who)
    state.admit()
    if target.by_history:
        target = await state.chat_index.place(target, conv, who)
    job = _ChatJob(state, who, conv, choice, target, channel, workspace)
    if stream:
        return await job.stream(request, include_usage)
    if key is None:
        status, payload, headers = await job.complete()
        return json_response(payload, status=status, headers=headers)
    # The effective session is part of the request: one key reused for another chat id conflicts.
    # A session chosen by the history is new at each first turn: the body alone names it.
    named = "(by history)" if target.by_history else target.id
    print_ = fingerprint({"body": body, "session_id": named, "session_key": channel})
    (status, payload, headers), replayed = await state.idempotency.run(
        (who, "chat", key), print_, job.complete
    )
    headers = dict(headers)
    if replayed:
        headers["Idempotency-Replayed"] = "true"
    return json_response(payload, status=status, headers=headers)


class _ChatJob:
    """One chat turn: open the session, reconcile, submit, encode."""

    def __init__(
        self,
        state: ServerState,
        who: str,
        conv: Conversation,
        choice: ModelChoice,
        target: ChatSession,
        channel: str | None,
        workspace: Any,
    ) -> None:
        self.state = state
        self.who = who
        self.conv = conv
        self.choice = choice
        self.target = target
        self.session_id = target.id
        self.derived = target.derived
        self.channel = channel
        self.workspace = workspace
        # Unique, not secret: no system call for randomness per request.
        self.id = f"chatcmpl-{_ids.getrandbits(96):024x}"
        self.created = int(time.time())

    async def _prepare(self, session: Session) -> Turn:
        if self.conv.system and self.conv.system != session.record.system_overlay:
            await session.set_system_overlay(self.conv.system)
        # With a derived id the body is the truth: the core reconciles the stored history with
        # it when this turn reaches the head of the session's queue, after any turn ahead of it.
        history = self.conv.history if self.derived else None
        return await submit_turn(session, self.conv, self.choice, self.who, reconcile=history)

    def _headers(self, model_ref: str) -> dict[str, str]:
        return session_headers(self.session_id, self.channel, model_ref)

    def _transcript(self, session: Session) -> Sequence[tuple[str, str]] | None:
        """The session's transcript after the turn, when the chat index records it."""
        return session.comparable_transcript() if self.target.by_history else None

    async def _remember(self, stored: Sequence[tuple[str, str]] | None, answered: str) -> None:
        """Record where the conversation now stands, before the client can send its next turn
        (a failure costs that turn a new session seeded from its body, never this answer)."""
        if stored is None:
            return
        try:
            await self.state.chat_index.record(self.who, self.target, self.conv, answered, stored)
        except Exception as exc:
            log.warning("recording the chat's history key failed: %s", exc)

    async def complete(self) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Run the turn to its end and return (status, body, headers)."""
        state = self.state
        state.active_turns += 1
        try:
            async with state.pool.use(
                self.session_id,
                owner=self.who,
                channel_key=self.channel,
                workspace=self.workspace,
                new=self.target.first,
            ) as session:
                model_ref, source = self.choice.resolved_for(session)
                workspace = session.cwd
                warning = await image_warning(
                    state.kernel, self.choice.resolved or model_ref, self.conv.parts
                )
                turn = await self._prepare(session)
                try:
                    done: TurnCompleted | None = None
                    async for event in turn.events():
                        if isinstance(event, TurnCompleted):
                            done = event
                finally:
                    await asyncio.shield(abandon(session, turn))
                await session.lease_held()  # not taken: answered as a failed open always was
                stored = self._transcript(session)
        finally:
            state.active_turns -= 1
        headers = {**self._headers(model_ref), **warning}
        if done is None:
            await self._remember(stored, "")
            raise ApiError(500, "internal_error", "The turn ended without an outcome")
        if "images_dropped" in done.warnings:  # e.g. the upstream refused them and got the text only
            headers["X-Hermes-Warning"] = "images_dropped"
        finish, block, extra = chat_finish(done)
        hermes = hermes_block(self.session_id, model_ref, self.choice, source, done, block)
        headers.update(extra)
        if finish is None and done.outcome.reason == "budget_exceeded":
            from hermes_api_server.budget_gate import turn_refused

            await self._remember(stored, "")
            raise turn_refused(done.outcome, headers, {"hermes": hermes})
        if finish is None:
            code = "provider_error" if done.outcome.reason == "provider_error" else "agent_incomplete"
            failure = state.kernel.redactor(
                done.outcome.message or "The agent failed before producing any text"
            )
            await self._remember(stored, "")
            raise ApiError(502, code, failure, headers=headers, extra={"hermes": hermes})
        from hermes_api_server.media import inline_media

        text = await asyncio.get_running_loop().run_in_executor(None, inline_media, done.text, workspace)
        await self._remember(stored, text)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if state.settings.show_reasoning and done.reasoning:
            message["reasoning_content"] = done.reasoning
        usage = done.turn_usage
        payload = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.choice.requested,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": usage.input,
                "completion_tokens": usage.output,
                "total_tokens": usage.total or usage.input + usage.output,
            },
            "hermes": hermes,
        }
        return 200, payload, headers

    async def stream(self, request: web.Request, include_usage: bool) -> web.StreamResponse:
        """Run the turn and stream chat chunks."""
        state = self.state
        state.active_turns += 1
        try:
            last: str | None = None
            async with state.pool.use(
                self.session_id,
                owner=self.who,
                channel_key=self.channel,
                workspace=self.workspace,
                new=self.target.first,
            ) as session:
                model_ref, source = self.choice.resolved_for(session)
                warning = await image_warning(
                    state.kernel, self.choice.resolved or model_ref, self.conv.parts
                )
                turn = await self._prepare(session)
                pump = EventPump(turn)
                chunks = ChatChunks(state, self.id, self.created, self.choice, self.session_id)
                try:
                    writer = SseWriter(request, {**self._headers(model_ref), **warning})
                    try:
                        last = await chunks.pump(
                            writer, pump, model_ref, source, include_usage, before_head=session.take_lease_now
                        )
                    except ClientGone:
                        pass
                finally:
                    await pump.close()
                    await asyncio.shield(abandon(session, turn))
                if not writer.opened:
                    await session.lease_held()  # not taken: answered as a failed open always was
                stored = self._transcript(session)
            await self._remember(stored, chunks.answered)
            if last is not None:
                # The turn is over and stored; the session is released (lease included) before
                # the client reads the end, so a follow-up request never waits behind this one's
                # clean-up.
                with contextlib.suppress(ClientGone):
                    await writer.finish(last)
            return writer.response
        finally:
            state.active_turns -= 1
