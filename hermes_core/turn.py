"""One turn of the agent loop (agent-core §2): stream, run tool rounds, steer, finish.

A :class:`TurnRun` executes a batch of queue items as one turn. Whatever happens — provider
failure, tool crash, interrupt — it emits exactly one ``TurnCompleted`` and returns the outcome,
and the session is reusable afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_core import tool_policy
from hermes_core.content import ImagePart, TextPart
from hermes_core.errors import ConfigError, HermesError, ProviderError, StorageError
from hermes_core.events import (
    ReasoningDelta,
    Retrying,
    SegmentStarted,
    TextDelta,
    TurnCompleted,
    TurnOutcome,
    TurnStarted,
    Usage,
    UsageUpdated,
)
from hermes_core.head_start import HeadStart
from hermes_core.history import materialize, to_messages
from hermes_core.ids import short_id
from hermes_core.providers import (
    ChatRequest,
    FinishChunk,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    ToolCallRequest,
    UsageChunk,
)
from hermes_core.storage import NewRow, Row, StoredToolCall

if TYPE_CHECKING:
    from hermes_core.models import ResolvedModel
    from hermes_core.session import Session
    from hermes_core.session_queue import QueueItem

log = logging.getLogger("hermes.turn")
RETRY_WAITS = (1.0, 2.0, 4.0, 8.0)
FAIR_EVERY = 64  # deltas between yields to the event loop


@dataclass(slots=True)
class CallResult:
    """What one model call produced (deltas kept as lists: joining once is linear)."""

    text_parts: list[str] = field(default_factory=list)
    reasoning_parts: list[str] = field(default_factory=list)
    calls: list[ToolCallRequest] = field(default_factory=list)
    finish: str = "stop"
    usage: Usage | None = None

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    @property
    def reasoning(self) -> str:
        return "".join(self.reasoning_parts)


class TurnFailed(Exception):
    """Ends the turn with a prepared outcome."""

    def __init__(self, outcome: TurnOutcome) -> None:
        super().__init__(outcome.message or outcome.reason)
        self.outcome = outcome


class TurnRun:
    """Executes one turn for a batch of queue items."""

    def __init__(self, session: Session, items: list[QueueItem], queued: bool = False) -> None:
        self.session = session
        self.kernel = session.kernel
        self.items = items
        self.turn_id = short_id("t_")
        self.queued = queued
        self.answerable = frozenset.intersection(*(i.answerable for i in items)) if items else frozenset()
        self.steer_buffer: list[str] = []
        self.settling = False
        self.text_parts: list[str] = []  # final-segment text
        self.all_text: list[str] = []
        self.reasoning: list[str] = []
        self.turn_usage = Usage()
        self.warnings: list[str] = []
        self.user_row_id: int | None = None
        self.assistant_row_id: int | None = None
        self.emitted_delta = False
        self.interrupt_reason: str | None = None
        self.task: asyncio.Task[TurnOutcome] | None = None
        self.tools: Any = None  # ToolRound, set while a batch runs
        self.resolved: ResolvedModel | None = None
        self._denials: Any = None
        self.started = False

    # -- public ------------------------------------------------------------------------------
    async def execute(self) -> TurnOutcome:
        """Run the turn body as a task and always finish with ``TurnCompleted``."""
        body = asyncio.ensure_future(self._body())
        self.task = body
        try:
            outcome = await asyncio.shield(body)
        except asyncio.CancelledError:
            # Our own drain task was cancelled (shutdown); still settle the turn.
            body.cancel()
            outcome = await self._settle_cancel(body)
        except TurnFailed as failed:
            outcome = failed.outcome
            if outcome.partial:
                await self._save_partial()  # keep what the user already saw
        except Exception as exc:  # an unexpected crash of the loop
            log.exception("turn %s crashed", self.turn_id)
            outcome = TurnOutcome(
                status="error",
                reason="tool_crash",
                layer="agent",
                partial=self.emitted_delta,
                message=self.kernel.redactor(f"{type(exc).__name__}: {exc}"),
            )
        return await self._complete(outcome)

    async def _settle_cancel(self, body: asyncio.Future[TurnOutcome]) -> TurnOutcome:
        try:
            return await body
        except BaseException:
            return self._interrupted_outcome()

    def _interrupted_outcome(self) -> TurnOutcome:
        reason = self.interrupt_reason or "interrupted_by_system"
        return TurnOutcome(status="interrupted", reason=reason, partial=self.emitted_delta)  # type: ignore[arg-type]

    async def interrupt(self, reason: str) -> None:
        """Cancel the provider stream or the running tool; close this turn's questions."""
        if self.interrupt_reason is None:
            self.interrupt_reason = reason
        if self.tools is not None:
            self.tools.cancel()
        self.kernel.broker.close_where(
            lambda q: q.turn_id == self.turn_id and q.task_id is None, "interrupted"
        )
        if self.task is not None and not self.task.done():
            self.task.cancel()

    # -- body --------------------------------------------------------------------------------
    async def _body(self) -> TurnOutcome:
        from hermes_core.tool_round import ToolRound

        try:
            return await self._run(ToolRound)
        except asyncio.CancelledError:
            self.emit_started()
            if self.tools is not None:
                await self.tools.abandon()
            await self._save_partial()
            return self._interrupted_outcome()

    async def _run(self, round_cls: Any) -> TurnOutcome:
        session = self.session
        kernel = self.kernel
        head = await self._persist_user_row()
        if self.interrupt_reason is not None:
            if head is not None:
                await head.discard()
            return self._interrupted_outcome()
        session._set_status("starting")
        if head is not None:
            provider = head.provider
        else:
            await self._auto_compress()
            try:
                self.resolved = await kernel._turn_model(session, self.items)
                hint = kernel.hub.missing_key_hint(self.resolved.provider)
                if hint is not None:
                    raise ConfigError(hint)
                provider = kernel.hub.get(self.resolved.provider)
            except HermesError as exc:
                raise TurnFailed(
                    TurnOutcome(
                        status="error", reason="agent_build", layer="agent", message=kernel.redactor(str(exc))
                    )
                ) from exc
        settings = kernel.settings
        limit = settings.agent.max_tool_rounds
        rounds = 0
        while True:
            result = await self._call_model(provider, head)
            head = None
            if not result.calls:
                self.settling = True
                self.text_parts = [result.text]
                await self._save_final(result)
                if result.finish == "length":
                    return TurnOutcome(status="complete", reason="length", partial=True)
                if result.finish == "refusal":
                    return TurnOutcome(status="complete", reason="refusal")
                return TurnOutcome(status="complete", reason="stop")
            if rounds >= limit:
                self.settling = True
                self.text_parts = [result.text]
                if result.text:
                    await self._save_final(result)
                return TurnOutcome(
                    status="error",
                    reason="iteration_cap",
                    partial=True,
                    cap=(rounds, limit),
                    layer="agent",
                    message=f"stopped after {rounds} tool rounds (limit {limit})",
                )
            rounds += 1
            assert self.resolved is not None
            assistant = await session._persist(
                [
                    NewRow(
                        role="assistant",
                        content=result.text,
                        reasoning=result.reasoning or None,
                        tool_calls=tuple(StoredToolCall("", c.id, c.name, c.arguments) for c in result.calls),
                        model=self.resolved.ref,
                        input_tokens=result.usage.input if result.usage else None,
                        output_tokens=result.usage.output if result.usage else None,
                    )
                ]
            )
            self.tools = round_cls(self, assistant[0])
            await self.tools.run()  # on cancel, _body completes the round's calls
            self.tools = None

    def _needs_compress(self) -> bool:
        """Tell whether the last call used more than the auto-compaction threshold of the window."""
        threshold = self.kernel.settings.compression.auto_threshold
        usage = self.session.usage
        if threshold <= 0 or not usage.context_used or not usage.context_max:
            return False
        return usage.context_used > threshold * usage.context_max

    async def _auto_compress(self) -> None:
        """Compact older turns when the last call used more than the threshold of the window."""
        from hermes_core import session_ops

        if not self._needs_compress():
            return
        try:
            await session_ops.compress(self.session, auto=True)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning(
                "auto-compaction of %s failed; the turn goes on uncompressed", self.session.id, exc_info=True
            )

    async def _persist_user_row(self) -> HeadStart | None:
        """Persist the user row (then emit ``TurnStarted``), opening the first model call meanwhile.

        The write and the upstream request overlap; nothing of the call is read, and no event of
        it emitted, before the row is stored and ``TurnStarted`` is out (agent-core §2, §4).

        :returns: the opened first call, or None when the turn makes it the ordinary way.
        """
        row = self._user_row()
        head: HeadStart | None = None
        starting: asyncio.Future[None] | None = None
        try:
            head = await self._head_start(row)
            if head is not None:
                # One pass of the loop sends the request before the write is queued. The write
                # runs on the database thread but needs the GIL between its SQLite calls: queued
                # first, it waited behind the loop's ~0.7 ms of HTTP client work, which left it
                # (and so TurnStarted and the first delta) finishing after the first chunk had
                # arrived from a fast upstream. Queued while the loop waits for the answer, it
                # is done long before.
                await asyncio.sleep(0)
            starting = asyncio.ensure_future(self._start(row))
            await starting
        except BaseException:
            if head is not None:
                await head.discard()
            if starting is not None:
                if not starting.done():
                    # Cancelling the write only waits for it (it is shielded), then re-raises.
                    starting.cancel()
                with contextlib.suppress(BaseException):
                    await starting
            raise
        return head

    async def _head_start(self, row: NewRow) -> HeadStart | None:
        """Open the first model call before the user row is stored, when nothing else must come first."""
        session = self.session
        kernel = self.kernel
        if self._needs_compress():
            return None  # compaction rewrites the history the call would carry
        ref, source = kernel._turn_model_ref(session, self.items)
        if not ref or source == "once":
            return None  # the ordinary path reports (or consumes) these
        try:
            resolved = await kernel.resolve_model(ref, session=session)
            if kernel.hub.missing_key_hint(resolved.provider) is not None:
                return None
            provider = kernel.hub.get(resolved.provider)
        except HermesError:
            return None
        self.resolved = resolved
        pending = materialize(session.id, row, 0)
        return HeadStart(provider, self._request(pending))

    def _user_row(self) -> NewRow:
        items = self.items
        parts: list[Any] = []
        texts = [i.text for i in items]
        for item in items:
            parts.extend(p for p in item.parts if isinstance(p, ImagePart))
        text = "\n\n".join(texts)
        all_parts = tuple([TextPart(text), *parts]) if parts else ()
        return NewRow(role="user", content=text, parts=all_parts, display_kind=items[0].display_kind)

    async def _start(self, row: NewRow) -> None:
        session = self.session
        first_turn = not any(r.role == "user" for r in session.rows)
        if first_turn:
            from hermes_core.titles import derive_title_if_needed

            derive_title_if_needed(session, row.content)
        try:
            made = await session._persist([row])
        except StorageError as exc:
            self.emit_started()
            raise TurnFailed(
                TurnOutcome(status="error", reason="tool_crash", layer="storage", message=str(exc))
            ) from exc
        except asyncio.CancelledError:
            # The write finished before the cancel was re-raised (it is shielded).
            self.user_row_id = session.rows[-1].id if session.rows else None
            self.emit_started()
            raise
        self.user_row_id = made[0].id
        self.emit_started()

    def emit_started(self) -> None:
        """Emit ``TurnStarted`` once."""
        if self.started:
            return
        self.started = True
        session = self.session
        ref, source = self.kernel._turn_model_ref(session, self.items)
        session.emit(
            TurnStarted(
                session_id=session.id,
                turn_id=self.turn_id,
                item_ids=tuple(i.item_id for i in self.items),
                user_row_id=self.user_row_id,
                queued=self.queued,
                model=ref or "",
                model_source=source,
            )
        )

    def _request(self, pending: Row | None = None) -> ChatRequest:
        session = self.session
        assert self.resolved is not None
        vision = bool(self.resolved.info and self.resolved.info.vision)
        messages = to_messages(session.rows if pending is None else [*session.rows, pending])
        if not vision and any(m.parts for m in messages):
            from dataclasses import replace

            messages = [replace(m, parts=()) if m.parts else m for m in messages]
            if "images_dropped" not in self.warnings and any(
                isinstance(p, ImagePart) for i in self.items for p in i.parts
            ):
                self.warnings.append("images_dropped")
        options: dict[str, Any] = {}
        for item in self.items:
            options.update(item.model_options or {})
        return ChatRequest(
            model=self.resolved.model,
            messages=tuple(messages),
            tools=tool_policy.tool_schemas(self.kernel, session, self.answerable),
            system=tool_policy.system_prompt(self.kernel, session),
            reasoning_effort=session.record.reasoning_effort or self.kernel.settings.reasoning_effort,
            options=options,
            purpose="turn",
        )

    async def _call_model(self, provider: Any, head: HeadStart | None = None) -> CallResult:
        session = self.session
        settings = self.kernel.settings
        request = head.request if head is not None else self._request()
        attempt = 0
        waited = 0.0
        while True:
            result = CallResult()
            segment: str | None = None
            emitted = False
            streamed = 0
            session._set_status("streaming")
            stream = head.chunks() if head is not None else provider.stream(request)
            head = None  # a retry opens a new call
            try:
                async for chunk in stream:
                    if isinstance(chunk, TextChunk | ReasoningChunk):
                        if not chunk.text:
                            continue
                        if segment is None:
                            segment = short_id("seg_")
                            session.emit(
                                SegmentStarted(
                                    session_id=session.id, turn_id=self.turn_id, segment_id=segment
                                )
                            )
                        emitted = self.emitted_delta = True
                        self._delta(result, segment, chunk)
                        streamed += 1
                        if streamed == 1 or not streamed % FAIR_EVERY:
                            # The first delta goes out before the rest of what already arrived is
                            # decoded (readers run now, not after the whole burst); later on, a
                            # provider that streams without awaiting must not starve the loop.
                            await asyncio.sleep(0)
                    elif isinstance(chunk, ToolCallChunk):
                        result.calls.append(chunk.call)
                    elif isinstance(chunk, UsageChunk):
                        result.usage = Usage(
                            input=chunk.input,
                            output=chunk.output,
                            reasoning=chunk.reasoning,
                            total=chunk.input + chunk.output,
                            calls=1,
                        )
                    elif isinstance(chunk, FinishChunk):
                        result.finish = chunk.reason
            except ProviderError as err:
                retry = (
                    err.kind in ("rate_limit", "upstream")
                    and err.retryable
                    and not emitted
                    and attempt < settings.agent.provider_retries
                )
                budget = settings.agent.provider_retry_max_wait_s - waited
                if retry and budget > 0:
                    wait = err.retry_after if err.retry_after is not None else RETRY_WAITS[min(attempt, 3)]
                    wait = max(0.0, min(wait, budget))
                    attempt += 1
                    session.emit(
                        Retrying(
                            session_id=session.id,
                            turn_id=self.turn_id,
                            attempt=attempt,
                            wait_s=wait,
                            kind=err.kind,
                        )
                    )
                    await asyncio.sleep(wait)
                    waited += wait
                    continue
                raise TurnFailed(
                    TurnOutcome(
                        status="error",
                        reason="provider_error",
                        error_kind=err.kind,
                        partial=self.emitted_delta,
                        retryable=err.retryable,
                        layer="provider",
                        retry_after=err.retry_after,
                        message=self.kernel.redactor(err.message),
                    )
                ) from err
            self._account(request, result)
            return result

    def _delta(self, result: CallResult, segment: str, chunk: TextChunk | ReasoningChunk) -> None:
        """Record one streamed delta and emit it."""
        session = self.session
        if isinstance(chunk, TextChunk):
            result.text_parts.append(chunk.text)
            self.all_text.append(chunk.text)
            session.emit(
                TextDelta(session_id=session.id, turn_id=self.turn_id, segment_id=segment, text=chunk.text)
            )
        else:
            result.reasoning_parts.append(chunk.text)
            self.reasoning.append(chunk.text)
            session.emit(
                ReasoningDelta(
                    session_id=session.id, turn_id=self.turn_id, segment_id=segment, text=chunk.text
                )
            )

    def _account(self, request: ChatRequest, result: CallResult) -> None:
        usage = result.usage
        if usage is None:
            words_in = sum(len(m.content) for m in request.messages) // 4
            out = len(result.text) // 4 + len(result.reasoning) // 4
            usage = Usage(input=words_in, output=out, total=words_in + out, calls=1, estimated=True)
        window = self.resolved.info.context_window if self.resolved and self.resolved.info else None
        from dataclasses import replace

        usage = replace(usage, context_used=usage.input + usage.output, context_max=window)
        result.usage = usage
        self.turn_usage = self.turn_usage.plus(usage)
        session = self.session
        session._usage = session._usage.plus(usage)
        session.emit(
            UsageUpdated(
                session_id=session.id, turn_id=self.turn_id, usage=session._usage, turn_usage=self.turn_usage
            )
        )

    async def _save_final(self, result: CallResult) -> None:
        assert self.resolved is not None
        made = await self.session._persist(
            [
                NewRow(
                    role="assistant",
                    content=result.text,
                    reasoning=result.reasoning or None,
                    model=self.resolved.ref,
                    input_tokens=result.usage.input if result.usage else None,
                    output_tokens=result.usage.output if result.usage else None,
                )
            ]
        )
        self.assistant_row_id = made[0].id

    async def _save_partial(self) -> None:
        """Keep text streamed before an interrupt, so the transcript shows what the user saw."""
        if self.assistant_row_id is not None or self.resolved is None:
            return
        try:
            pending = self._pending_segment_text()
            if pending:
                made = await self.session._persist(
                    [
                        NewRow(
                            role="assistant",
                            content=pending,
                            model=self.resolved.ref,
                            meta={"interrupted": True},
                        )
                    ]
                )
                self.assistant_row_id = made[0].id
                self.text_parts = [pending]
        except Exception:
            log.warning("could not save the interrupted reply of %s", self.session.id, exc_info=True)

    def _pending_segment_text(self) -> str:
        saved = sum(
            len(r.content)
            for r in self.session.rows
            if r.role == "assistant" and r.id > (self.user_row_id or 0)
        )
        full = "".join(self.all_text)
        return full[saved:] if saved < len(full) else ""

    async def _complete(self, outcome: TurnOutcome) -> TurnOutcome:
        session = self.session
        self.emit_started()
        self.settling = True
        pending = "\n\n".join(self.steer_buffer) if self.steer_buffer else None
        self.steer_buffer = []
        try:
            await session._update_record(usage=_usage_dict(session._usage))
        except Exception:
            log.warning("could not store usage of %s", session.id, exc_info=True)
        session.emit(
            TurnCompleted(
                session_id=session.id,
                turn_id=self.turn_id,
                outcome=outcome,
                text="".join(self.text_parts),
                reasoning="".join(self.reasoning),
                usage=session._usage,
                turn_usage=self.turn_usage,
                pending_steer=pending,
                warnings=tuple(self.warnings),
                user_row_id=self.user_row_id,
                assistant_row_id=self.assistant_row_id,
            )
        )
        self.kernel._after_turn(session, outcome)
        return outcome


def _usage_dict(usage: Usage) -> dict[str, Any]:
    # Every field is a scalar, so this equals dataclasses.asdict at a fraction of its cost.
    return {name: getattr(usage, name) for name in _USAGE_FIELDS}


_USAGE_FIELDS = tuple(Usage.__dataclass_fields__)


def monotonic() -> float:
    return time.monotonic()
