"""A live session's events as pi's event stream (docs/reference/pi.md#events).

A pi *run* is everything from the first turn a prompt starts until the session has nothing left
to do: the prompt's turn, the turns that deliver late steering, and the queued follow-ups. It
opens with ``agent_start`` and ends with ``agent_end`` and then exactly one ``agent_settled``. A pi
*turn* is one model call plus the tool calls it asked for, so one Hermes turn with two tool rounds
is three pi turns.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, assert_never

from hermes_core import (
    BackgroundCompleted,
    QuestionClosed,
    QuestionRequested,
    ReasoningDelta,
    Retrying,
    SegmentStarted,
    SessionChanged,
    SessionProblem,
    SteerDelivered,
    SubagentEvent,
    TextDelta,
    TitleChanged,
    ToolAnnounced,
    ToolCompleted,
    ToolDecision,
    ToolExecuting,
    ToolProgress,
    TurnCompleted,
    TurnStarted,
    UsageUpdated,
)
from hermes_pi.assistant import AssistantStream
from hermes_pi.messages import user_message
from hermes_pi.turns import TurnEncoder

if TYPE_CHECKING:
    from hermes_core import AnyEvent, Session, TurnOutcome
    from hermes_pi.dialogs import Dialogs

log = logging.getLogger("hermes.pi")
YIELD_EVERY = 128
_STOP = {"stop": "stop", "length": "length", "refusal": "stop"}


class StreamHost(Protocol):
    """What the stream asks of the transport that owns it."""

    def turn_started(self, ev: TurnStarted) -> None:
        """A turn of the run began."""

    def steer_delivered(self) -> None:
        """The accepted steering texts reached the model."""

    def turn_finished(self, ev: TurnCompleted) -> None:
        """A turn ended: keep the steering it could not deliver for the run's next turn."""

    def compaction_seen(self) -> None:
        """The core compacted the history on its own, before a turn."""

    def before_settle(self) -> bool:
        """The session went idle: start more work of this run and say so, or return False."""


class RunStream(TurnEncoder):
    """Encode one session's events as pi records and keep the state of its run.

    :param session: the live session.
    :param send: writes one record.
    :param send_frame: writes one encoded record.
    :param host: the transport's hooks.
    :param dialogs: the open extension-UI dialogs.
    :param answer: the question kinds shown to the client.
    :param max_retries: ``agent.provider_retries``, reported as ``maxAttempts``.
    """

    def __init__(
        self,
        session: Session,
        send: Callable[[dict[str, Any]], None],
        send_frame: Callable[[bytes], None],
        host: StreamHost,
        dialogs: Dialogs,
        answer: frozenset[str],
        max_retries: Callable[[], int],
    ) -> None:
        self.session = session
        self._send = send
        self._send_frame = send_frame
        self._host = host
        self._dialogs = dialogs
        self._answer = answer
        self._max_retries = max_retries
        self.active = False  # a run was accepted and has not settled
        self.started = False  # agent_start went out
        self.aborted = False
        self.messages: list[dict[str, Any]] = []
        self._init_turns()
        self._holds = 0
        self._closed = False
        self._settled_waiters: list[asyncio.Future[None]] = []
        self._sub = session.subscribe()
        self._task = asyncio.get_running_loop().create_task(self._pump(), name=f"pi-stream-{session.id}")

    # -- the run ------------------------------------------------------------------------------
    def begin(self) -> None:
        """Mark a run as accepted (``isStreaming`` from now on); its events follow."""
        if not self.active:
            self.active = True
            self.aborted = False

    def cancel_begin(self) -> None:
        """Undo :meth:`begin` when the prompt that began the run was refused."""
        if self.active and not self.started:
            self.active = False
            self._wake()

    def hold(self) -> None:
        """Keep the run from settling until :meth:`release` (more of it is being submitted)."""
        self._holds += 1

    def release(self) -> None:
        """Undo one :meth:`hold`, settling the run if the session has gone idle meanwhile."""
        self._holds -= 1
        self.maybe_settle()

    async def settled(self) -> None:
        """Wait until the current run (if any) has sent ``agent_settled`` or the stream closed."""
        if not self.active or self._closed:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._settled_waiters.append(future)
        await future

    def maybe_settle(self) -> None:
        """End the run when the session has nothing left to do."""
        if not self.active or not self.started or self._holds or self.session.busy:
            return
        if self._host.before_settle():
            return
        self._flush()
        self._close_turn()
        self._send({"type": "agent_end", "messages": self.messages, "willRetry": False})
        self._send({"type": "agent_settled", "aborted": self.aborted})
        self.active = self.started = False
        self.messages = []
        self._wake()

    def _wake(self) -> None:
        """Resolve every :meth:`settled` waiter."""
        waiters, self._settled_waiters = self._settled_waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(None)

    async def close(self) -> None:
        """Stop reading the session's events (pending ones are dropped); nothing waits on it after."""
        self._closed = True
        self._sub.close()
        self._task.cancel()
        try:
            await self._task
        except BaseException:
            pass
        self.active = False
        self._wake()

    # -- the pump -----------------------------------------------------------------------------
    async def _pump(self) -> None:
        handled = 0
        async for ev in self._sub:
            try:
                self._on_event(ev)
            except Exception:
                log.exception("pi: failed to encode %s", type(ev).__name__)
            handled += 1
            if handled >= YIELD_EVERY:
                handled = 0
                await asyncio.sleep(0)

    def _on_event(self, ev: AnyEvent) -> None:
        match ev:
            case TextDelta() | ReasoningDelta():
                if ev.turn_id == self._turn_id:
                    self._delta("text" if isinstance(ev, TextDelta) else "thinking", ev.text)
                return
        self._flush()
        match ev:
            case TurnStarted():
                self._turn_started(ev)
            case SegmentStarted():
                if ev.turn_id == self._turn_id:
                    self._call_begins()
            case UsageUpdated():
                if ev.turn_id == self._turn_id:
                    self._call_ended(ev)
            case Retrying():
                if ev.turn_id == self._turn_id:
                    self._retrying(ev)
            case ToolAnnounced():
                if ev.turn_id == self._turn_id:
                    self._tool_announced(ev)
            case ToolProgress():
                self._tool_progress(ev)
            case ToolCompleted():
                if ev.turn_id == self._turn_id:
                    self._tool_completed(ev)
            case SteerDelivered():
                self._host.steer_delivered()
            case QuestionRequested():
                if ev.kind in self._answer:
                    self._send(self._dialogs.request(ev))
            case QuestionClosed():
                self._dialogs.closed(ev.request_id)
            case TurnCompleted():
                if ev.turn_id == self._turn_id:
                    self._turn_completed(ev)
            case TitleChanged():
                if ev.origin == "explicit":
                    self._send({"type": "session_info_changed", "name": ev.title})
            case SessionChanged():
                if "history" in ev.fields and ev.turn_id is None and self.active:
                    self._host.compaction_seen()
                if "busy" in ev.fields:
                    self.maybe_settle()
            case SessionProblem():
                self._send(
                    {
                        "type": "extension_ui_request",
                        "id": str(uuid.uuid4()),
                        "method": "notify",
                        "message": ev.message,
                        "notifyType": "error",
                    }
                )
            case TextDelta() | ReasoningDelta():
                pass  # streamed by the match above
            case ToolDecision() | ToolExecuting() | BackgroundCompleted() | SubagentEvent():
                pass  # pi's RPC has no message for them
            case _:
                assert_never(ev)

    # -- turns --------------------------------------------------------------------------------
    def _turn_started(self, ev: TurnStarted) -> None:
        self._close_turn()
        self._turn_id = ev.turn_id
        self._model = ev.model or None
        self._last_turn_usage = (0, 0, 0)
        self._retry_attempt = 0
        if not self.active:
            self.begin()
        if not self.started:
            self.started = True
            self._send({"type": "agent_start"})
        self._host.turn_started(ev)
        self._open_turn()
        row = next((r for r in reversed(self.session.rows) if r.id == ev.user_row_id), None)
        if row is not None:
            message = user_message(row.content, row.parts, row.created_at)
            self._send({"type": "message_start", "message": message})
            self._send({"type": "message_end", "message": message})
            self.messages.append(message)

    # -- the end of a turn --------------------------------------------------------------------
    def _turn_completed(self, ev: TurnCompleted) -> None:
        outcome = ev.outcome
        stop, error = _stop_of(outcome)
        if self.retry_cancelled:
            self.retry_cancelled = False
            stop, error = "error", "Retry cancelled"
        if self._retry_attempt and outcome.status != "complete":
            self._send(
                {
                    "type": "auto_retry_end",
                    "success": False,
                    "attempt": self._retry_attempt,
                    "finalError": error or outcome.reason,
                }
            )
            self._retry_attempt = 0
        if self._round is not None:
            self._close_turn()
        if outcome.status != "complete" or self._assistant is not None:
            self._open_turn()
            if self._assistant is None:
                self._assistant = AssistantStream(self._model, ev.ts, self._send, self._send_frame)
            self._finish_assistant(stop, error)
        self._close_turn()
        self._turn_id = None
        self._host.turn_finished(ev)
        self.maybe_settle()


def _stop_of(outcome: TurnOutcome) -> tuple[str, str | None]:
    """Return pi's ``stopReason`` and ``errorMessage`` for a turn outcome."""
    if outcome.status == "interrupted":
        return "aborted", None
    if outcome.status == "error":
        return "error", outcome.message or outcome.reason
    return _STOP.get(outcome.reason, "stop"), None
