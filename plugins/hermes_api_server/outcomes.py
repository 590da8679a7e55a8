"""Map a core turn outcome onto chat, Responses and run fields (docs/reference/core.md#turn-outcomes;
docs/reference/api-server.md#chat-response, #response-object, #run-lifecycle)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from hermes_api_server.run_event_models import RunEndFields, RunUsage
from hermes_core import redact

if TYPE_CHECKING:
    from hermes_api_server.model_select import ModelChoice
    from hermes_core import TurnCompleted, TurnOutcome


_HEADER_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def error_code(outcome: TurnOutcome) -> str:
    """Return the ``error_code`` of a failed turn: the provider, storage, or the agent itself."""
    if outcome.reason in ("provider_error", "budget_exceeded"):
        return outcome.reason
    return "storage_error" if outcome.layer == "storage" else "agent_error"


def chat_finish(done: TurnCompleted) -> tuple[str | None, dict[str, Any], dict[str, str]]:
    """Return (finish_reason, hermes fields, headers); finish None means a 502 (no text)."""
    outcome = done.outcome
    reason = outcome.reason
    if reason == "stop":
        return "stop", {"completed": True, "partial": False, "failed": False}, {}
    if reason in ("length", "iteration_cap"):
        code = "output_truncated" if reason == "length" else "max_iterations_reached"
        block = {"completed": False, "partial": True, "failed": False, "error_code": code}
        return "length", block, {"X-Hermes-Completed": "false", "X-Hermes-Partial": "true"}
    if reason == "budget_exceeded" and done.text:
        # Stopped at a model call the budget refused: what came before stands, cut short.
        block = {"completed": False, "partial": True, "failed": False, "error_code": "budget_exceeded"}
        return "length", block, {"X-Hermes-Completed": "false", "X-Hermes-Partial": "true"}
    if reason == "refusal":
        return (
            "content_filter",
            {"completed": False, "partial": False, "failed": False, "error_code": "refusal"},
            {},
        )
    if outcome.status == "interrupted":
        block = {"completed": False, "partial": bool(done.text), "failed": True, "error_code": "interrupted"}
        return ("error" if done.text else None), block, {}
    if not done.text:
        return (
            None,
            {"completed": False, "partial": False, "failed": True, "error_code": error_code(outcome)},
            {},
        )
    block = {"completed": False, "partial": True, "failed": True, "error_code": error_code(outcome)}
    message = redact(outcome.message or "the agent turn failed")[:200]
    # A header value may hold no control character (aiohttp would refuse the whole response).
    return "error", block, {"X-Hermes-Error": _HEADER_UNSAFE.sub(" ", message)}


def hermes_block(
    session_id: str,
    model_ref: str,
    choice: ModelChoice,
    source: str,
    done: TurnCompleted,
    fields: dict[str, Any],
) -> dict[str, Any]:
    """Return the ``hermes`` block of a chat response, never with null fields."""
    block: dict[str, Any] = {
        "session_id": session_id,
        "model": model_ref,
        "requested_model": choice.requested_raw or choice.requested,
        "model_source": source,
    }
    block.update(fields)
    block["usage_estimated"] = bool(done.turn_usage.estimated)
    if done.warnings:  # what the turn had to leave out, e.g. images_dropped
        block["warnings"] = list(done.warnings)
    if done.outcome.message and fields.get("error_code"):
        block["error"] = redact(done.outcome.message)
    return block


def responses_status(done: TurnCompleted) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
    """Return (status, error, incomplete_details) of a Responses object."""
    outcome = done.outcome
    reason = outcome.reason
    if reason == "stop":
        return "completed", None, None
    if reason == "length":
        return "incomplete", None, {"reason": "max_output_tokens"}
    if reason == "refusal":
        return "incomplete", None, {"reason": "content_filter"}
    if reason == "interrupted_by_user":
        return "incomplete", None, {"reason": "interrupted"}
    if reason == "interrupted_by_system":
        return "failed", {"code": "interrupted", "message": "The turn was interrupted"}, None
    code = "max_iterations_reached" if reason == "iteration_cap" else error_code(outcome)
    message = redact(outcome.message or "The agent turn failed")
    return "failed", {"code": code, "message": message}, None


def run_terminal(done: TurnCompleted, stopped: bool) -> tuple[str, RunEndFields]:
    """Return (status, terminal fields) of a run (docs/reference/api-server.md#run-lifecycle)."""
    outcome = done.outcome
    reason = outcome.reason
    fields = RunEndFields(output=done.text, usage=usage_dict(done))
    if done.pending_steer:
        fields["pending_steer"] = done.pending_steer
    if done.warnings:
        fields["warnings"] = list(done.warnings)
    if reason == "stop":
        fields["completed"] = True
        return "completed", fields
    fields["completed"] = False
    if reason in ("iteration_cap", "length"):
        code = "max_iterations_reached" if reason == "iteration_cap" else "output_truncated"
        exit_reason = code
        if reason == "iteration_cap" and outcome.cap:
            exit_reason = f"max_iterations_reached({outcome.cap[0]}/{outcome.cap[1]})"
        fields["error"] = redact(outcome.message or code)
        fields["partial"] = True
        fields["error_code"] = code
        fields["turn_exit_reason"] = exit_reason
        return "failed", fields
    if reason == "refusal":
        fields["partial"] = False
        fields["error_code"] = "refusal"
        fields["turn_exit_reason"] = "refusal"
        return "failed", fields
    if reason == "budget_exceeded":
        fields["error"] = redact(outcome.message or "budget exceeded")
        fields["partial"] = bool(done.text)
        fields["error_code"] = "budget_exceeded"
        fields["turn_exit_reason"] = "budget_exceeded"
        return "failed", fields
    if reason == "interrupted_by_user" or (stopped and outcome.status == "interrupted"):
        fields["interrupted"] = True
        fields["turn_exit_reason"] = "interrupted_by_user"
        return "cancelled", fields
    if reason == "interrupted_by_system":
        fields["error"] = "The server shut down before this run settled."
        fields["interrupted"] = True
        fields["turn_exit_reason"] = "interrupted_by_system(shutdown)"
        return "interrupted", fields
    fields["error"] = redact(outcome.message or "The agent turn failed")
    fields["partial"] = bool(outcome.partial)
    fields["error_code"] = error_code(outcome)
    fields["turn_exit_reason"] = "error"
    return "failed", fields


def usage_dict(done: TurnCompleted) -> RunUsage:
    """Return Responses-style usage of a turn."""
    usage = done.turn_usage
    return RunUsage(
        input_tokens=usage.input,
        output_tokens=usage.output,
        total_tokens=usage.total or usage.input + usage.output,
    )
