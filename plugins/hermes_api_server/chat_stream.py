"""The SSE frames of a streamed ``POST /v1/chat/completions``: role, coalesced content and
reasoning deltas, tool progress, the outcome and ``[DONE]``
(docs/reference/api-server.md#chat-completions)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, assert_never, cast

from hermes_api_server.chat_progress import ProgressFrames
from hermes_api_server.chunk_models import (
    ChatCompletionChunk,
    ChunkChoice,
    ChunkDelta,
    ChunkError,
    ChunkHead,
    ChunkUsage,
    FinishReason,
)
from hermes_api_server.errors import dumps
from hermes_api_server.outcomes import chat_finish, error_code, hermes_block
from hermes_api_server.turns import KEEPALIVE_S
from hermes_core import (
    BackgroundCompleted,
    DeltaCoalescer,
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

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from hermes_api_server.model_select import ModelChoice
    from hermes_api_server.sse import SseWriter
    from hermes_api_server.state import ServerState
    from hermes_api_server.turns import EventPump

#: Longest the response head waits to leave with the first frame (docs/reference/api-server.md#sse-streams).
#: A head sent on its own costs a write, a wake-up of the client and the new session's lease
#: taken early; 50 ms made most first turns of a burst pay that (their first token comes later
#: than 50 ms while the server works through the burst), and so did nearly every turn of a real
#: model, which takes longer than that to think. One second covers both (issue #30).
HEAD_WAIT_S = 1.0

#: Events this stream writes nothing for. They reach it with the next event it writes (in order,
#: so what it notes from them is still noted first) instead of waking it on their own: a wake-up
#: is a loop step (two on a new chat's way to its first token: the title and ``TurnStarted``),
#: and one that writes nothing put off the next keep-alive, so a long hidden reasoning kept the
#: connection silent (docs/reference/api-server.md#sse-streams).
_SILENT: frozenset[type] = frozenset(
    {
        TurnStarted,
        SegmentStarted,
        Retrying,
        QuestionRequested,
        QuestionClosed,
        ToolDecision,
        ToolExecuting,
        ToolProgress,
        SteerDelivered,
        UsageUpdated,
        TitleChanged,
        SessionChanged,
        SessionProblem,
        BackgroundCompleted,
    }
)
#: By (tool progress frames on, reasoning shown): without progress frames the tools' own events
#: are silent too, and hidden reasoning is.
_SILENT_BY: dict[tuple[bool, bool], frozenset[type]] = {
    (progress, shown): _SILENT
    | (frozenset() if progress else frozenset({ToolAnnounced, ToolCompleted, SubagentEvent}))
    | (frozenset() if shown else frozenset({ReasoningDelta}))
    for progress in (False, True)
    for shown in (False, True)
}


class ChatChunks:
    """Encodes one streamed chat turn as ``chat.completion.chunk`` frames."""

    def __init__(
        self, state: ServerState, chat_id: str, created: int, choice: ModelChoice, session_id: str
    ) -> None:
        self.state = state
        self.id = chat_id
        self.created = created
        self.choice = choice
        self.requested = choice.requested
        self.session_id = session_id
        self._around: list[str] | None = None
        self._sent: list[str] = []

    @property
    def answered(self) -> str:
        """The content streamed so far: what the client will send back as this turn's reply."""
        return "".join(self._sent)

    @property
    def head(self) -> ChunkHead:
        """The envelope every chunk of this stream starts with."""
        return ChunkHead(
            id=self.id, object="chat.completion.chunk", created=self.created, model=self.requested
        )

    def chunk(self, delta: ChunkDelta, finish: FinishReason | None = None) -> ChatCompletionChunk:
        """Return a chunk whose one choice carries ``delta`` (and ``finish`` on the last)."""
        return ChatCompletionChunk(
            **self.head, choices=[ChunkChoice(index=0, delta=delta, finish_reason=finish)]
        )

    async def pump(
        self,
        writer: SseWriter,
        pump: EventPump,
        model_ref: str,
        source: str,
        include_usage: bool,
        before_head: Callable[[], Awaitable[None]] | None = None,
    ) -> str:
        """Stream the turn's frames; return the last ones (the outcome and ``[DONE]``), unwritten.

        :param before_head: awaited before the head (which names the session) leaves on its own,
            ahead of the turn's first event: a new session's writer lease is taken by then.
        """
        settings = self.state.settings
        loop = asyncio.get_running_loop()
        # The head and the role chunk leave with the first frame (one packet on the path to the
        # first token), or on their own when the turn has shown nothing for HEAD_WAIT_S.
        head: str | None = self._with_delta('"role":"assistant"')
        head_by = loop.time() + HEAD_WAIT_S
        # A keep-alive leaves after KEEPALIVE_S without a write; the first one KEEPALIVE_S after
        # the request, not after a head sent alone.
        keep_by = loop.time() + KEEPALIVE_S
        deltas = DeltaCoalescer(keep_reasoning=settings.show_reasoning)
        progress = ProgressFrames(self.state.kernel, self.head) if settings.tool_progress_events else None
        pump.quiet(_SILENT_BY[progress is not None, bool(settings.show_reasoning)])
        # The first frames leave as soon as they exist, with the head and the role chunk in the
        # same write; what the same upstream read still yields follows a loop step later.
        while True:
            wait = max(0.0, (head_by if head is not None else keep_by) - loop.time())
            batch = await pump.next(wait)
            if batch is None:
                if head is not None:
                    if before_head is not None:
                        try:
                            await before_head()
                        except Exception:
                            # Nothing leaves: the turn ends at once, and the caller answers.
                            head_by = loop.time() + KEEPALIVE_S
                            continue
                        finally:
                            before_head = None
                    await writer.open(head)
                    head = None
                else:
                    await writer.raw(": keepalive\n\n")
                    keep_by = loop.time() + KEEPALIVE_S
                continue
            out: list[str] = []
            ended = not batch

            for event in batch:
                if deltas.add(event):
                    continue
                match event:
                    case ToolAnnounced() | ToolCompleted() | SubagentEvent():
                        frame = progress.frame(event) if progress else None
                        if frame is not None:
                            self._flush(out, deltas)
                            out.append(frame)
                    case ToolDecision() | QuestionClosed():
                        if progress:
                            progress.note(event)
                    case TurnCompleted():
                        self._flush(out, deltas)
                        out.extend(self._final(event, model_ref, source, include_usage))
                        ended = True
                    case TextDelta() | ReasoningDelta():
                        pass  # taken by the coalescer above
                    case (
                        TurnStarted()
                        | SegmentStarted()
                        | Retrying()
                        | QuestionRequested()
                        | ToolExecuting()
                        | ToolProgress()
                        | SteerDelivered()
                        | UsageUpdated()
                        | TitleChanged()
                        | SessionChanged()
                        | SessionProblem()
                        | BackgroundCompleted()
                    ):
                        pass  # no chunk of their own (usage leaves with the outcome)
                    case _:
                        assert_never(event)
            self._flush(out, deltas)
            if head is not None and (out or ended):
                out.insert(0, head)
                head = None
            if ended:
                # An empty batch means the events stopped without an outcome (a discarded queue
                # item); the stream still ends the way clients expect.
                out.append("data: [DONE]\n\n")
                return "".join(out)
            if not out:
                continue
            keep_by = loop.time() + KEEPALIVE_S
            if writer.opened:
                await writer.raw("".join(out))
            else:
                await writer.open("".join(out))

    def _flush(self, out: list[str], deltas: DeltaCoalescer) -> None:
        """Turn pending text and reasoning into one content chunk."""
        text, reasoning = deltas.take()
        if text is not None or reasoning is not None:
            fields: list[str] = []
            if text is not None:
                self._sent.append(text)
                fields.append('"content":' + dumps(text))
            if reasoning is not None:
                fields.append('"reasoning_content":' + dumps(reasoning))
            out.append(self._with_delta(",".join(fields)))

    def _with_delta(self, fields: str) -> str:
        """Return the frame of a chunk whose delta's members are ``fields`` (encoded JSON):
        the same bytes as ``_frame(self.chunk(ChunkDelta(...)))``, from a chunk around an empty
        delta encoded once per stream."""
        around = self._around
        if around is None:
            around = self._around = _frame(self.chunk(ChunkDelta())).split('"delta":{}', 1)
            around[0] += '"delta":{'
            around[1] = "}" + around[1]
        return around[0] + fields + around[1]

    def _final(self, done: TurnCompleted, model_ref: str, source: str, include_usage: bool) -> list[str]:
        finish, block, _ = chat_finish(done)
        if finish is None:
            finish = "error"
            block = {
                "completed": False,
                "partial": False,
                "failed": True,
                "error_code": error_code(done.outcome),
            }
            if done.outcome.status == "interrupted":
                block["error_code"] = "interrupted"
        usage = done.turn_usage
        usage_obj = ChunkUsage(
            prompt_tokens=usage.input,
            completion_tokens=usage.output,
            total_tokens=usage.total or usage.input + usage.output,
        )
        last = self.chunk(ChunkDelta(), cast("FinishReason", finish))
        if finish != "stop" or done.warnings:  # a complete turn only needs it to carry warnings
            last["hermes"] = hermes_block(self.session_id, model_ref, self.choice, source, done, block)
        frames: list[str] = []
        if finish == "error":
            message = self.state.kernel.redactor(done.outcome.message or "The agent turn failed")
            last["error"] = ChunkError(message=message, type="server_error")
            frames.append(error_line(last["error"]))
        if not include_usage:
            last["usage"] = usage_obj
        frames.append(_frame(last))
        if include_usage:
            frames.append(_frame(ChatCompletionChunk(**self.head, choices=[], usage=usage_obj)))
        return frames


def _frame(payload: ChatCompletionChunk) -> str:
    return "data: " + dumps(payload) + "\n\n"


def error_line(error: ChunkError) -> str:
    """Return the error as a bare JSON line before the final chunk, for frontends that store it.

    Open WebUI keeps a streamed error with the message (so it survives a reload) only from a
    frame without ``choices``; it also reads a line that is plain JSON. To an SSE parser that
    line is a field SSE does not define (its name is the text before the first colon), which
    the standard says to ignore: the SDKs and strict typed clients never see it, and still end
    on the final chunk's ``error`` (docs/reference/api-server.md#chat-stream).
    """
    return dumps({"error": error}) + "\n\n"
