"""What the chat shows: session events turned into scrollback text and a small live area.

Finished things (your prompt, a completed Markdown block, a tool call once it is done, a
notice) are written once to the scrollback through :class:`Output`. Things still changing
(the unfinished end of the reply, running tools, subagents, open questions, the connection
state) live in :class:`Screen`'s state, which the interactive app draws above the prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes_chat import transcript
from hermes_chat.markdown_stream import MarkdownStream
from hermes_chat.render import Painter, tool_subject
from hermes_chat.screen_parts import QUESTION_KINDS, Output, Question, ToolCall, Turn

__all__ = ["QUESTION_KINDS", "Output", "Question", "Screen", "ToolCall", "Turn"]


class Screen:
    """The chat's view of one session at a time."""

    def __init__(
        self, painter: Painter, out: Output, current: Callable[[], str | None], *, live: bool
    ) -> None:
        self.painter = painter
        self.out = out
        self._current = current
        self.live = live  # interactive: Markdown by blocks; otherwise deltas go straight out
        self.info: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}
        self.connection = ""
        self.status_text = ""
        self.turn: Turn | None = None
        self.tools: list[ToolCall] = []
        self.running: dict[str, ToolCall] = {}
        self.questions: list[Question] = []
        self.subagents: dict[str, dict[str, Any]] = {}
        self.rows_shown: set[int] = set()
        self.failed_turns = 0
        self.completed_turns = 0
        self.finished_turns = 0
        self.expected_turns = 0  # prompts the gateway started (each ends with one message.complete)
        self.watchers: list[Callable[[], None]] = []  # called after every event
        self.on_question: Callable[[Question], None] | None = None

    # -- derived state -----------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """Return whether a turn is running (from the latest ``session.info``)."""
        return bool(self.info.get("running")) or self.turn is not None

    def tail(self, max_chars: int = 1200) -> str:
        """Return the end of the reply that is not in the scrollback yet."""
        if self.turn is None:
            return ""
        return self.turn.stream.tail[-max_chars:]

    def tool(self, number: int) -> ToolCall | None:
        """Return tool call ``number`` (as shown in its header)."""
        return self.tools[number - 1] if 0 < number <= len(self.tools) else None

    # -- writing -----------------------------------------------------------------------------------

    def notice(self, text: str, level: str = "info") -> None:
        """Write a notice line."""
        self.out.write(self.painter.notice(text, level))

    def echo_user(self, text: str) -> None:
        """Write the prompt the user sent."""
        shown = self.painter.user(text)
        if shown:
            self.out.write(shown)

    def command_output(self, text: str) -> None:
        """Write what a slash command printed (as preformatted text)."""
        if text:
            self.out.write(self.painter.command(text), reply=True)

    def write_blocks(self, blocks: list[str]) -> None:
        """Write finished Markdown blocks of the reply."""
        for block in blocks:
            rendered = self.painter.markdown(block)
            if rendered:
                self.out.write(rendered, reply=True)

    # -- events ------------------------------------------------------------------------------------

    def event(self, session_id: str, kind: str, payload: dict[str, Any], replayed: bool = False) -> None:
        """Apply one event of the gateway (the client's :class:`~hermes_chat.client.Listener`)."""
        if session_id and session_id != self._current():
            if kind == "background.complete":
                self._background(payload)
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, payload)
        elif kind.endswith(".request") and kind.split(".")[0] in QUESTION_KINDS:
            self.add_question(kind.split(".")[0], payload)
        elif kind.endswith(".expire") and kind.split(".")[0] in QUESTION_KINDS:
            self._expire(payload)
        elif kind.startswith("subagent."):
            self._subagent(kind.split(".", 1)[1], payload)
        self.out.refresh()
        for watcher in list(self.watchers):
            watcher()

    def _message_start(self, payload: dict[str, Any]) -> None:
        if self.turn is not None:
            self._finish_turn(None)
        row = payload.get("user_row_id")
        self.turn = Turn(MarkdownStream(), row if isinstance(row, int) else None)
        if isinstance(row, int):
            self.rows_shown.add(row)
        self.status_text = ""

    def _reasoning(self, payload: dict[str, Any]) -> None:
        if self.turn is None:
            self._message_start({})
        assert self.turn is not None
        self.turn.reasoning += str(payload.get("text", ""))

    def _show_reasoning(self) -> None:
        turn = self.turn
        if turn is not None and turn.reasoning and not turn.reasoning_shown:
            turn.reasoning_shown = True
            shown = self.painter.reasoning(turn.reasoning)
            if shown:
                self.out.write(shown)

    def _delta(self, payload: dict[str, Any]) -> None:
        if self.turn is None:
            self._message_start({})
        assert self.turn is not None
        text = str(payload.get("text", ""))
        self._show_reasoning()
        self.status_text = ""
        if self.live:
            self.write_blocks(self.turn.stream.feed(text))
        else:
            self.turn.stream.text += text
            self.turn.stream.done = len(self.turn.stream.text)
            self.out.write(text, reply=True)

    def _flush_text(self) -> None:
        """Commit the reply's text so far (a tool call or a question comes next)."""
        turn = self.turn
        if turn is None:
            return
        self._show_reasoning()
        if self.live:
            blocks, _ = turn.stream.finish(None)
            self.write_blocks(blocks)
        elif turn.stream.text and not turn.stream.text.endswith("\n"):
            self.out.write("\n", reply=True)
        turn.before_tools += turn.stream.text
        if turn.stream.text.strip():
            turn.shown.append(("assistant", turn.stream.text.strip()))
        turn.stream = MarkdownStream()

    def _tool_start(self, payload: dict[str, Any]) -> None:
        self._flush_text()
        call = ToolCall(len(self.tools) + 1, str(payload.get("name", "tool")), tool_subject(payload))
        self.tools.append(call)
        self.running[str(payload.get("tool_id", call.number))] = call

    def _tool_progress(self, payload: dict[str, Any]) -> None:
        call = self.running.get(str(payload.get("tool_id")))
        if call is not None:
            lines = [line for line in str(payload.get("preview", "")).splitlines() if line.strip()]
            if lines:
                call.preview = lines[-1]

    def _tool_complete(self, payload: dict[str, Any]) -> None:
        self._flush_text()
        call = self.running.pop(str(payload.get("tool_id")), None)
        if call is None:  # verbose off sends some completions without a start
            call = ToolCall(len(self.tools) + 1, str(payload.get("name", "tool")), tool_subject(payload))
            self.tools.append(call)
        call.payload = payload
        if self.turn is not None:
            self.turn.shown.append(("tool", str(payload.get("result", "")).strip()))
        self.out.write(self.painter.tool(call.number, payload))

    def _message_complete(self, payload: dict[str, Any]) -> None:
        final = payload.get("text")
        self._finish_turn(final if isinstance(final, str) else None)
        status = payload.get("status")
        self.finished_turns += 1
        persisted = payload.get("persisted_turn")
        if isinstance(persisted, dict):
            self.rows_shown.update(v for v in persisted.values() if isinstance(v, int))
        if status == "error":
            self.failed_turns += 1
            error: dict[str, Any] = payload["error"] if isinstance(payload.get("error"), dict) else {}
            message = error.get("message") or error.get("code") or "the turn failed"
            self.notice(f"turn failed: {message}", "error")
        elif status == "interrupted":
            if payload.get("reason") == "interrupted_by_system":
                # Not the user's Ctrl+C: the agent stopped (a crash, a shutdown) mid-reply.
                why = str(payload.get("message") or "the agent stopped")
                self.notice(f"the reply above was cut off: {why}", "warn")
            else:
                self.notice("interrupted", "warn")
        else:
            self.completed_turns += 1
        warning = payload.get("warning")
        if warning == "output_truncated":
            self.notice("the reply hit the model's output limit", "warn")
        elif warning == "refusal":
            self.notice("the model refused", "warn")
        steer = payload.get("pending_steer")
        if isinstance(steer, str) and steer:
            self.notice(f"not delivered (the turn ended first): {steer} — send it as a prompt", "warn")

    def _finish_turn(self, final: str | None) -> None:
        turn = self.turn
        if turn is None:
            return
        self.turn = None
        self._show_reasoning()
        stream = turn.stream
        whole = turn.before_tools + stream.text
        if final is None or final in (whole, stream.text):
            final = None
        elif final.startswith(whole):
            final = stream.text + final[len(whole) :]
        if not self.live:
            if final is not None and final.startswith(stream.text):
                self.out.write(final[len(stream.text) :], reply=True)
                stream.text = final
            if stream.text and not stream.text.endswith("\n"):
                self.out.write("\n", reply=True)
            return
        blocks, matched = stream.finish(final)
        self.write_blocks(blocks)
        if not matched and final is not None:
            self.notice("the final reply differs from what streamed; here it is in full:", "warn")
            self.write_blocks([final])

    def apply_info(self, payload: dict[str, Any]) -> None:
        """Take a ``session.info`` payload (and its usage)."""
        self.info = payload
        usage = payload.get("usage")
        if isinstance(usage, dict):
            self.usage = usage

    def _usage(self, payload: dict[str, Any]) -> None:
        usage = payload.get("usage")
        if isinstance(usage, dict):
            self.usage = usage

    def _title(self, payload: dict[str, Any]) -> None:
        self.info = {**self.info, "title": payload.get("title")}

    def _status(self, payload: dict[str, Any]) -> None:
        kind, text = payload.get("kind"), str(payload.get("text", ""))
        if kind == "steer":
            self.notice(f"↪ {text}")
        elif kind == "process":
            self.notice(text)
        elif kind == "ready":
            self.status_text = ""
        else:
            self.status_text = text

    def _error(self, payload: dict[str, Any]) -> None:
        self.notice(str(payload.get("message", "error")), "error")

    def _background(self, payload: dict[str, Any]) -> None:
        status = payload.get("status")
        level = "ok" if status == "complete" else "warn"
        self.notice(f"background task {payload.get('task_id', '')} {status}:", level)
        text = str(payload.get("text", ""))
        if text:
            self.write_blocks([text] if self.live else [])
            if not self.live:
                self.out.write(text + "\n", reply=True)

    def add_question(self, kind: str, payload: dict[str, Any]) -> None:
        """Show a question the agent asks (once per request id)."""
        self._flush_text()
        request_id = str(payload.get("request_id", ""))
        if any(q.request_id == request_id for q in self.questions):
            return
        question = Question(kind, request_id, payload)
        self.questions.append(question)
        if self.on_question is not None:
            self.on_question(question)

    def _expire(self, payload: dict[str, Any]) -> None:
        request_id = str(payload.get("request_id", ""))
        before = len(self.questions)
        self.questions = [q for q in self.questions if q.request_id != request_id]
        if len(self.questions) < before:
            reason = payload.get("reason", "timeout")
            self.notice(f"the question expired ({reason})", "warn")

    def answered(self, question: Question, shown: str, level: str = "ok") -> None:
        """Drop an answered question and record the answer (never a secret's value)."""
        self.questions = [q for q in self.questions if q.request_id != question.request_id]
        self.notice(shown, level)
        self.out.refresh()

    def _subagent(self, phase: str, payload: dict[str, Any]) -> None:
        child = str(payload.get("subagent_id", ""))
        if phase == "complete":
            self.subagents.pop(child, None)
            self.out.write(self.painter.subagent(payload))
            return
        state = self.subagents.setdefault(child, {"tools": 0, "last": ""})
        state.update({k: payload[k] for k in ("goal", "depth", "status", "model") if k in payload})
        if phase in ("progress", "thinking"):
            lines = [line for line in str(payload.get("text", "")).splitlines() if line.strip()]
            if lines:
                state["last"] = lines[-1]
        elif phase == "tool" and payload.get("phase") == "start":
            state["tools"] += 1
            state["last"] = f"{payload.get('tool', 'tool')}…"

    # -- whole sessions (hermes_chat/transcript.py) ---------------------------------------------

    def show_snapshot(self, snapshot: dict[str, Any], *, limit: int = 40) -> None:
        """Show a session being opened (resumed, branched, new): its info and its transcript."""
        transcript.show_snapshot(self, snapshot, limit=limit)

    def commit_tail(self) -> None:
        """Write the reply's unfinished end now (the link dropped); the turn stays open."""
        turn = self.turn
        if turn is None or not self.live:
            return
        blocks, _ = turn.stream.finish(None)
        self.write_blocks(blocks)

    def rebuilt(self, snapshot: dict[str, Any]) -> None:
        """Reconcile after the gateway lost our place: show what is new, mark what was cut off."""
        transcript.rebuilt(self, snapshot)


_HANDLERS: dict[str, Callable[[Screen, dict[str, Any]], None]] = {
    "message.start": Screen._message_start,
    "reasoning.delta": Screen._reasoning,
    "message.delta": Screen._delta,
    "message.complete": Screen._message_complete,
    "tool.start": Screen._tool_start,
    "tool.progress": Screen._tool_progress,
    "tool.complete": Screen._tool_complete,
    "session.info": Screen.apply_info,
    "session.usage": Screen._usage,
    "session.title": Screen._title,
    "status.update": Screen._status,
    "error": Screen._error,
    "background.complete": Screen._background,
}
