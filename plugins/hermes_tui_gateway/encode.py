"""Turn the core's records into TUI-gateway payloads (docs/reference/tui-gateway.md#shared-objects, #events).

Pure functions over core records: the event catalog of docs/reference/tui-gateway.md#event-catalog, the usage
object of docs/reference/tui-gateway.md#usage-object, the ``SessionInfo`` of
docs/reference/tui-gateway.md#sessioninfo and the transcript rows of
docs/reference/tui-gateway.md#transcript-rows.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable
from dataclasses import asdict
from pathlib import PurePosixPath
from typing import Any, Literal

from hermes_core import (
    FileChange,
    QuestionClosed,
    QuestionRequested,
    Row,
    SessionInfo,
    SubagentEvent,
    ToolAnnounced,
    ToolCompleted,
    ToolServerStatus,
    TurnCompleted,
    Usage,
    cut_off_reason,
)
from hermes_tui_gateway.wire import (
    ApprovalRequestPayload,
    InfoExtra,
    MessageComplete,
    QuestionExpire,
    QuestionRequestPayload,
    SecretRequestPayload,
    SessionInfoObj,
    SudoRequestPayload,
    ToolComplete,
    ToolStart,
    UsageObj,
)
from hermes_tui_gateway.wire_results import TranscriptMessage

Redact = Callable[[str], str]


def usage_obj(usage: Usage, model: str | None) -> UsageObj:
    """Return the docs/reference/tui-gateway.md#usage-object usage object.

    :param usage: the core's usage.
    :param model: the model in force, ``provider:model``.
    :returns: the wire object.
    """
    out: UsageObj = {
        "model": model,
        "input": usage.input,
        "output": usage.output,
        "prompt": usage.input,
        "completion": usage.output,
        "reasoning": usage.reasoning,
        "total": usage.total,
        "calls": usage.calls,
        "estimated": usage.estimated,
    }
    if usage.context_used is not None:
        out["context_used"] = usage.context_used
    if usage.context_max:
        out["context_max"] = usage.context_max
        if usage.context_used is not None:
            out["context_percent"] = round(100.0 * usage.context_used / usage.context_max, 1)
    if usage.cost_usd is not None:
        out["cost_usd"] = usage.cost_usd
    return out


def info_obj(info: SessionInfo, extra: InfoExtra) -> SessionInfoObj:
    """Return the docs/reference/tui-gateway.md#sessioninfo ``SessionInfo``.

    :param info: the core's snapshot.
    :param extra: gateway-held fields (``busy_policy``, ``tools``, ``version``, ``branch``).
    :returns: the wire object.
    """
    out: SessionInfoObj = {
        "session_id": info.session_id,
        "stored_session_id": info.session_id,
        "title": info.title,
        # Strings, never null: the Ink TUI splits and matches on them (docs/protocols/tui-gateway.md).
        "model": info.model or "",
        "provider": info.provider or "",
        "reasoning_effort": info.reasoning_effort,
        "approval_mode": info.profile,
        "yolo": info.profile == "off",
        "busy": info.busy,
        "cwd": info.cwd,
        "running": info.busy,
        "status": info.status,
        "queued": info.queued,
        "usage": usage_obj(info.usage, info.model),
        # Fields the Ink TUI reads that have no counterpart here, in their empty form.
        "skills": {},
        "fast": False,
        "service_tier": "",
        "personality": "",
        "release_date": "",
        "update_behind": None,
        "update_command": "",
    }
    out.update(extra)
    return out


def mcp_server_obj(server: ToolServerStatus) -> dict[str, Any]:
    """Return one ``mcp_servers`` entry of ``SessionInfo``: our server state plus the fields the
    Ink TUI's session panel reads (``connected``, ``status``, ``disabled``).

    :param server: one server of a tool source.
    :returns: the wire object.
    """
    out = server.as_dict()
    out["connected"] = server.state == "ready"
    out["disabled"] = server.state == "stopped"
    out["status"] = _SERVER_STATUS.get(server.state, "failed")
    return out


_SERVER_STATUS = {
    "ready": "connected",
    "starting": "connecting",
    "restarting": "connecting",
    "stopped": "disabled",
}


def row_obj(row: Row, include_active: bool = False) -> TranscriptMessage:
    """Return one docs/reference/tui-gateway.md#transcript-rows ``TranscriptMessage``.

    :param row: a projected row.
    :param include_active: add ``active`` (and ``archived_reason``) for archived listings.
    :returns: the wire object.
    """
    out: TranscriptMessage = {
        "role": row.role,
        "text": row.content,
        "row_id": row.id,
        "timestamp": float(row.created_at),
        "display_kind": row.display_kind,
    }
    if row.reasoning:
        out["reasoning"] = row.reasoning
    cut = cut_off_reason(row)
    if cut is not None:
        out["cut_off"] = cut  # the reply stopped early: "error" or "interrupted"
    if row.role == "tool":
        out["name"] = row.tool_name
        out["context"] = _short(row.content, 80)
    if include_active:
        out["active"] = row.active
        if not row.active:
            out["archived_reason"] = row.archived_reason
    return out


def is_user_turn(row: Row) -> bool:
    """Whether a row counts for user ordinals (docs/reference/tui-gateway.md#transcript-rows)."""
    return row.role == "user" and row.active and row.display_kind is None


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_start(ev: ToolAnnounced) -> ToolStart:
    """Return the ``tool.start`` payload."""
    return {
        "tool_id": ev.call_id,
        "name": ev.name,
        "context": _short(ev.preview or ev.title or "", 80),
        "args": ev.args_redacted,
    }


def args_text(args: Any) -> str:
    """Return a tool call's arguments as readable text (``verbose`` detail: ``tool.start.args_text``)."""
    if isinstance(args, dict):
        return "\n".join(f"{k}: {v if isinstance(v, str) else json.dumps(v)}" for k, v in args.items())
    return json.dumps(args, ensure_ascii=False)


def _diff_names(path: str, cwd: str | None) -> tuple[str, str]:
    """Return the ``---``/``+++`` names: ``a/<rel>``/``b/<rel>`` inside the workspace, else the path."""
    if cwd:
        try:
            rel = PurePosixPath(path).relative_to(cwd)
        except ValueError:
            rel = None
        if rel is not None and str(rel) != ".":
            return f"a/{rel}", f"b/{rel}"
    return path, path


def inline_diff(change: FileChange, cwd: str | None = None) -> str:
    """Return a plain unified diff of one file change, named like ``git diff`` names files.

    :param change: the change.
    :param cwd: the session's workspace; paths inside it are shown relative to it.
    :returns: the diff; a last line without a newline is marked a "No newline at end of file" line.
    """
    old = (change.old_text or "").splitlines(keepends=True)
    new = change.new_text.splitlines(keepends=True)
    before, after = _diff_names(change.path, cwd)
    if change.old_text is None:
        before = "/dev/null"
    out = []
    for line in difflib.unified_diff(old, new, before, after):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def tool_complete(ev: ToolCompleted, args: Any, redact: Redact, cwd: str | None = None) -> ToolComplete:
    """Return the ``tool.complete`` payload."""
    out: ToolComplete = {
        "tool_id": ev.call_id,
        "name": ev.name,
        "args": args if args is not None else {},
        "duration_s": round(ev.duration_s, 3),
        "result": redact(ev.result_text),
    }
    if ev.is_error:
        out["error"] = True
    out["summary"] = _short(redact(ev.result_text), 80)
    if ev.file_change is not None:
        out["inline_diff"] = inline_diff(ev.file_change, cwd)
    if ev.todos is not None:
        out["todos"] = [asdict(t) for t in ev.todos]
    return out


def subagent(ev: SubagentEvent, redact: Redact) -> dict[str, Any]:
    """Return the payload of a ``subagent.<kind>`` event (docs/reference/tui-gateway.md#event-catalog).

    Besides the core's fields it repeats a few under the names the Ink TUI's subagent panel reads:
    ``tool_name`` (``tool``), ``duration_seconds`` (``duration_s``), ``tool_count``
    (``tool_calls``), ``input_tokens``/``output_tokens`` (``usage``).
    """
    from hermes_core import subagent_payload  # the subagent module: not needed to open a session

    out = subagent_payload(ev, redact)
    if "tool" in out:
        out["tool_name"] = out["tool"]
    if "duration_s" in out:
        out["duration_seconds"] = out["duration_s"]
    if "tool_calls" in out:
        out["tool_count"] = out["tool_calls"]
    usage = out.get("usage")
    if isinstance(usage, dict):
        out["input_tokens"] = usage.get("input", 0)
        out["output_tokens"] = usage.get("output", 0)
    return out


def question_request(ev: QuestionRequested) -> tuple[str, QuestionRequestPayload]:
    """Return the event type and payload of a question (docs/reference/tui-gateway.md#event-catalog)."""
    p: QuestionRequestPayload
    if ev.kind == "approval":
        keys = list(ev.approval_keys)
        approval: ApprovalRequestPayload = {
            "request_id": ev.request_id,
            "command": ev.command_redacted or "",
            "description": ev.description or "",
            "choices": list(ev.choices or ("once", "deny")),
            "tool_name": ev.tool_name,
            "pattern_keys": keys,
            "allow_session": ev.allow_session,
            "allow_permanent": ev.persistable,
            "timeout_s": ev.timeout_s,
        }
        if keys:
            approval["pattern_key"] = keys[0]
        p = approval
    elif ev.kind == "clarify":
        p = {
            "request_id": ev.request_id,
            "question": ev.question or "",
            "choices": list(ev.choices) if ev.choices else None,
            "timeout_s": ev.timeout_s,
        }
    elif ev.kind == "sudo":
        sudo: SudoRequestPayload = {"request_id": ev.request_id, "timeout_s": ev.timeout_s}
        if ev.command:
            sudo["command"] = ev.command
        p = sudo
    else:
        secret: SecretRequestPayload = {
            "request_id": ev.request_id,
            "prompt": ev.prompt or "",
            "env_var": ev.env_var,
            "timeout_s": ev.timeout_s,
        }
        if ev.metadata:
            secret["metadata"] = ev.metadata
        p = secret
    if ev.task_id:
        p["task_id"] = ev.task_id
    return f"{ev.kind}.request", p


def question_expire(ev: QuestionClosed) -> tuple[str, QuestionExpire] | None:
    """Return the ``<kind>.expire`` event, or None (answered, or shutdown: nothing is sent)."""
    if ev.reason in ("answered", "shutdown"):
        return None
    reason: Literal["timeout", "interrupted", "closed"] = (
        ev.reason if ev.reason in ("timeout", "interrupted", "closed") else "closed"
    )
    return f"{ev.kind}.expire", {"request_id": ev.request_id, "reason": reason}


def message_complete(ev: TurnCompleted, model: str | None, redact: Redact) -> MessageComplete:
    """Return the ``message.complete`` payload per the outcome table of
    docs/reference/tui-gateway.md#event-catalog."""
    outcome = ev.outcome
    p: MessageComplete = {
        "text": ev.text,
        "status": outcome.status,
        "usage": usage_obj(ev.usage, model),
        "turn_usage": usage_obj(ev.turn_usage, model),
    }
    if ev.reasoning:
        p["reasoning"] = ev.reasoning
    if ev.pending_steer:
        p["pending_steer"] = ev.pending_steer
    warning = ev.warnings[0] if ev.warnings else None
    reason = outcome.reason
    if reason == "length":
        warning = "output_truncated"
        p["partial"] = True
    elif reason == "refusal":
        warning = "refusal"
    elif outcome.status == "error":
        code: str = reason
        if reason == "iteration_cap":
            code = "iteration_limit"
            p["partial"] = True
        elif reason == "budget_exceeded":
            p["partial"] = bool(outcome.partial or ev.text)
        elif reason == "provider_error":
            code = outcome.error_kind or "upstream"
            if outcome.partial or ev.text:
                p["partial"] = True
        p["error"] = {
            "code": code,
            "message": redact(outcome.message or reason.replace("_", " ")),
            "retryable": outcome.retryable,
            "layer": outcome.layer,
        }
    if warning:
        p["warning"] = warning
    if outcome.status == "interrupted":
        p["reason"] = reason
        if outcome.message:
            p["message"] = redact(outcome.message)
    if ev.user_row_id is not None or ev.assistant_row_id is not None:
        p["persisted_turn"] = {"user_row_id": ev.user_row_id, "assistant_row_id": ev.assistant_row_id}
    return p


def token_estimate(width: int, height: int) -> int:
    """Return the image token estimate of docs/reference/tui-gateway.md#terminal-and-attachments."""
    return 85 * math.ceil(width / 512) * math.ceil(height / 512)
