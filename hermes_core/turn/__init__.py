"""One turn of the agent loop (docs/reference/core.md#the-turn-loop): stream, run tool rounds, steer, finish.

A :class:`TurnRun` executes a batch of queue items as one turn. Whatever happens — provider
failure, tool crash, interrupt — it emits exactly one ``TurnCompleted`` and returns the outcome,
and the session is reusable afterwards.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from hermes_core import vision
from hermes_core.errors import ConfigError, HermesError, StorageError
from hermes_core.events import (
    TurnCompleted,
    TurnOutcome,
    TurnStarted,
    Usage,
)
from hermes_core.ids import short_id
from hermes_core.providers import (
    ChatRequest,
)
from hermes_core.storage import NewRow, Row, StoredToolCall
from hermes_core.turn import model_call, trace
from hermes_core.turn import start as turn_start
from hermes_core.turn.budget import TurnBudget, exceeded
from hermes_core.turn.model_call import CallResult, TurnFailed
from hermes_core.turn.tool_round import ToolRound

if TYPE_CHECKING:
    from hermes_core.approvals.denials import DenialMemory
    from hermes_core.models import ResolvedModel
    from hermes_core.session.live import Session
    from hermes_core.session.queue import QueueItem
    from hermes_core.tracing import Span

log = logging.getLogger("hermes.turn")


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
        #: Results of background children that ended while the session was idle (this turn reads them).
        self.notes = session.kernel.sessions.children.take_notes(session.id)
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
        self.tools: ToolRound | None = None  # set while a batch of tool calls runs
        self.resolved: ResolvedModel | None = None
        self.vision: bool | None = False  # whether images go to the model (vision.settle)
        #: What was denied in this turn (made on first use by ``tool_round.run_denials``).
        self.denials: DenialMemory | None = None
        self.started = False
        #: The turn's ``invoke_agent`` span while it runs (None: tracing is off).
        self.span: Span | None = None
        #: What the turn charges (docs/reference/budgets.md#in-a-turn).
        self.budget = TurnBudget(self)

    # -- public ------------------------------------------------------------------------------
    async def execute(self) -> TurnOutcome:
        """Run the turn body as a task and always finish with ``TurnCompleted``."""
        if self.kernel.tracer is not None:
            self.span = trace.open_turn(self, self.kernel.tracer)
        body = asyncio.ensure_future(self._body())
        self.task = body
        try:
            # Awaited directly (a shield cost the loop two more passes per turn): a cancel of our
            # own drain task (shutdown) reaches the body, which settles it as an interrupt.
            outcome = await body
        except asyncio.CancelledError:
            # The body ended cancelled (it was cancelled before it started); still settle the turn.
            body.cancel()
            outcome = await self._settle_cancel(body)
        except TurnFailed as failed:
            outcome = failed.outcome
            if outcome.partial:
                await self._save_partial("error")  # keep what the user already saw
        except StorageError as exc:
            # The database went away mid-turn (the user row was stored at the start): a failure
            # of the storage layer, reported as such, not a crash of the agent loop.
            log.warning("turn %s failed: storage: %s", self.turn_id, exc)
            outcome = TurnOutcome(
                status="error",
                reason="tool_crash",
                layer="storage",
                partial=self.emitted_delta,
                message=self.kernel.redactor(str(exc)),
            )
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
        self.kernel.pending_questions.close_where(
            lambda q: q.turn_id == self.turn_id and q.task_id is None, "interrupted"
        )
        if self.task is not None and not self.task.done() and not self.settling:
            # While settling the final reply is being stored: cancelling then could leave a row
            # stored that the session does not know; the turn is as good as complete.
            self.task.cancel()

    # -- body --------------------------------------------------------------------------------
    async def _body(self) -> TurnOutcome:
        try:
            return await self._run()
        except asyncio.CancelledError:
            self.emit_started()
            if self.tools is not None:
                await self.tools.abandon()
            await self._save_partial("interrupted")
            return self._interrupted_outcome()

    async def _run(self) -> TurnOutcome:
        session = self.session
        kernel = self.kernel
        await turn_start.reconcile_transcript(self)
        if self.budget.active:
            await self.budget.start()  # a refusal ends the turn once its prompt is stored
        head = await turn_start.persist_user_row(self)
        if self.interrupt_reason is not None:
            if head is not None:
                await head.discard()
            return self._interrupted_outcome()
        session.set_status("starting")
        if self.budget.refused is not None:
            raise TurnFailed(exceeded(self.budget.refused, partial=False))
        if head is not None:
            provider = head.provider
        else:
            await self._auto_compress()
            try:
                self.resolved = await kernel.models.resolve_for_turn(session, self.items)
                hint = kernel.hub.missing_key_hint(self.resolved.provider)
                if hint is not None:
                    raise ConfigError(hint)
                provider = kernel.hub.get(self.resolved.provider)
                await vision.settle(self)
            except HermesError as exc:
                raise TurnFailed(
                    TurnOutcome(
                        status="error", reason="agent_build", layer="agent", message=kernel.redactor(str(exc))
                    )
                ) from exc
        settings = kernel.settings
        limit = settings.agent.max_tool_rounds
        lineage = session.lineage
        if lineage is not None and lineage.tool_round_limit is not None:
            limit = min(limit, lineage.tool_round_limit)
        rounds = 0
        while True:
            result = await model_call.call_model(self, provider, head)
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
            assistant = await session.append_rows(
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
            self.tools = ToolRound(self, assistant[0])
            await self.tools.run()  # on cancel, _body completes the round's calls
            if self.vision is not True and self.tools.images:
                await vision.settle(self)  # a tool returned images: may the model see them?
            self.tools = None

    def needs_compress(self) -> bool:
        """Tell whether the last call used more than the auto-compaction threshold of the window."""
        threshold = self.kernel.settings.compression.auto_threshold
        usage = self.session.usage
        if threshold <= 0 or not usage.context_used or not usage.context_max:
            return False
        return usage.context_used > threshold * usage.context_max

    async def _auto_compress(self) -> None:
        """Compact older turns when the last call used more than the threshold of the window."""
        from hermes_core.session import ops as session_ops

        if not self.needs_compress():
            return
        try:
            admission = self.budget.admission  # the turn's own buckets pay for its compaction
            charge = admission.charge if admission is not None else None
            await session_ops.compress(self.session, auto=True, charge=charge)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning(
                "auto-compaction of %s failed; the turn goes on uncompressed", self.session.id, exc_info=True
            )

    def emit_started(self) -> None:
        """Emit ``TurnStarted`` once."""
        if self.started:
            return
        self.started = True
        session = self.session
        ref, source = self.kernel.models.for_turn(session, self.items)
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

    def build_request(self, pending: Row | None = None) -> ChatRequest:
        """Build the next model request from the session's rows (and a row not yet stored)."""
        return model_call.build_request(self, pending)

    async def _save_final(self, result: CallResult) -> None:
        assert self.resolved is not None
        # The session's usage total rides with the reply (one write, see _complete).
        made = await self.session.append_rows(
            [
                NewRow(
                    role="assistant",
                    content=result.text,
                    reasoning=result.reasoning or None,
                    model=self.resolved.ref,
                    input_tokens=result.usage.input if result.usage else None,
                    output_tokens=result.usage.output if result.usage else None,
                )
            ],
            with_usage=True,
        )
        self.assistant_row_id = made[0].id

    async def _save_partial(self, why: str) -> None:
        """Keep text streamed before a failure or an interrupt, so the transcript shows what the
        user saw; the row is marked cut off (``meta["cut_off"]`` = ``why``, see ``history.cut_off_reason``).
        """
        if self.assistant_row_id is not None or self.resolved is None:
            return
        try:
            pending = self._pending_segment_text()
            if pending:
                made = await self.session.append_rows(
                    [
                        NewRow(
                            role="assistant",
                            content=pending,
                            model=self.resolved.ref,
                            meta={"cut_off": why},
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
        if self.budget.active:
            try:
                await self.budget.finish()
            except Exception:
                log.warning("could not release the budget of %s", self.turn_id, exc_info=True)
        try:
            await session.save_usage()  # written already with a complete turn's reply
        except Exception:
            log.warning("could not store usage of %s", session.id, exc_info=True)
        session.emit(
            TurnCompleted(
                session_id=session.id,
                turn_id=self.turn_id,
                outcome=outcome,
                text="".join(self.text_parts),
                reasoning="".join(self.reasoning),
                usage=session.usage,
                turn_usage=self.turn_usage,
                pending_steer=pending,
                warnings=tuple(self.warnings),
                user_row_id=self.user_row_id,
                assistant_row_id=self.assistant_row_id,
            )
        )
        from hermes_core.titles import maybe_refine

        maybe_refine(self.kernel, session)  # kernel-wide follow-up of a finished turn
        if self.span is not None:
            trace.close_turn(self.span, outcome, self.turn_usage)
            self.span = None
        return outcome


def monotonic() -> float:
    return time.monotonic()
