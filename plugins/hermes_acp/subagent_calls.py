"""Child agents as ACP tool calls (docs/reference/acp.md#subagents).

Each child that ``delegate_task`` starts is shown as a tool call of its own, ``kind`` ``other``,
id ``subagent-<child id>``: announced ``pending`` when it is requested, ``in_progress`` when it
starts, updated with its latest output (at most every 0.2 s) and closed ``completed`` or
``failed`` with its summary. ``session/load`` replays the same calls from the stored
``delegate_task`` results, and below each child the children it delegated to in turn (read
from the child's own stored transcript), so the whole tree comes back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hermes_acp import toolcalls
from hermes_acp.state import CallState
from hermes_core import SubagentEvent

if TYPE_CHECKING:
    from hermes_acp.state import AcpSession
    from hermes_core import Kernel, Row

PROGRESS_INTERVAL_S = 0.2
TAIL_CHARS = 4000
#: How many descendant transcripts one ``session/load`` reads at most (a guard, not a limit in use).
MAX_REPLAYED_DESCENDANTS = 512
Send = Callable[[dict[str, Any]], None]


def call_id(subagent_id: str) -> str:
    """The ACP tool-call id of a child."""
    return f"subagent-{subagent_id}"


def announce(subagent_id: str, goal: str, raw: dict[str, Any]) -> dict[str, Any]:
    """The ``tool_call`` update announcing a child."""
    first = goal.strip().splitlines()[0] if goal.strip() else "task"
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id(subagent_id),
        "title": f"Subagent: {first[:80]}",
        "kind": "other",
        "status": "pending",
        "rawInput": {"goal": goal, **raw},
    }


def close(
    subagent_id: str, status: str, summary: str, error: str | None, raw: dict[str, Any]
) -> dict[str, Any]:
    """The final ``tool_call_update`` of a child."""
    text = summary if status == "completed" else (error or status)
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id(subagent_id),
        "status": "completed" if status == "completed" else "failed",
        "content": [toolcalls.text_block(text or "(no answer)")],
        "rawOutput": {"status": status, "summary": summary, "error": error, **raw},
    }


class SubagentCalls:
    """Turns one turn's ``SubagentEvent`` stream into tool-call updates."""

    def __init__(self, send: Send, session: AcpSession) -> None:
        self._send = send
        self._session = session
        self._tails: dict[str, str] = {}
        self._sent_at: dict[str, float] = {}

    def handle(self, ev: SubagentEvent) -> None:
        """Encode one child event."""
        cid = call_id(ev.subagent_id)
        calls = self._session.calls
        if ev.kind == "spawn_requested" or cid not in calls:
            if cid in calls:
                return
            given = {
                "task_index": ev.task_index,
                "task_count": ev.task_count,
                "depth": ev.depth,
                "model": ev.model,
            }
            update = announce(ev.subagent_id, ev.goal, given)
            calls[cid] = CallState(update)
            self._send(update)
            if ev.kind == "spawn_requested":
                return
        state = calls[cid]
        if ev.kind == "complete":
            calls.pop(cid, None)
            self._tails.pop(cid, None)
            usage = ev.usage
            raw: dict[str, Any] = {
                "tool_calls": ev.payload.get("tool_calls"),
                "duration_s": ev.payload.get("duration_s"),
                "tokens": {"input": usage.input, "output": usage.output} if usage else None,
            }
            summary = str(ev.payload.get("summary") or "")
            error = ev.payload.get("error")
            self._send(
                close(ev.subagent_id, ev.status, summary, error if isinstance(error, str) else None, raw)
            )
            return
        if state.status == "pending":
            state.status = "in_progress"
            self._send({"sessionUpdate": "tool_call_update", "toolCallId": cid, "status": "in_progress"})
        added = ""
        if ev.kind == "progress":
            added = str(ev.payload.get("text", ""))
        elif ev.kind == "tool" and ev.payload.get("phase") == "start":
            added = f"\n[{ev.payload.get('tool')}]\n"
        if not added:
            return
        tail = (self._tails.get(cid, "") + added)[-TAIL_CHARS:]
        self._tails[cid] = tail
        now = time.monotonic()
        if now - self._sent_at.get(cid, 0.0) < PROGRESS_INTERVAL_S:
            return
        self._sent_at[cid] = now
        self._send(
            {"sessionUpdate": "tool_call_update", "toolCallId": cid, "content": [toolcalls.text_block(tail)]}
        )


def _results(result_text: str) -> list[dict[str, Any]]:
    """The per-task entries of a stored ``delegate_task`` result (none when it is not one)."""
    try:
        # raw_decode: steer text or background results may follow the JSON in a stored result.
        body, _ = json.JSONDecoder().raw_decode(result_text)
    except ValueError:
        return []
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list):
        return []
    return [i for i in results if isinstance(i, dict) and isinstance(i.get("subagent_id"), str)]


def delegate_results(rows: Sequence[Row]) -> list[str]:
    """The texts of the ``delegate_task`` results among a transcript's tool rows, in order."""
    return [r.content for r in rows if r.role == "tool" and r.tool_name == "delegate_task"]


async def stored_descendants(kernel: Kernel, rows: Sequence[Row]) -> dict[str, list[str]]:
    """Map every descendant child of a transcript to the ``delegate_task`` results stored in its
    own transcript (children whose transcript is gone map to nothing)."""
    found: dict[str, list[str]] = {}
    pending = [item["subagent_id"] for text in delegate_results(rows) for item in _results(text)]
    while pending and len(found) < MAX_REPLAYED_DESCENDANTS:
        child_id = pending.pop(0)
        if child_id in found:
            continue
        try:
            stored = await kernel.sessions.stored(child_id)
        except Exception:
            found[child_id] = []
            continue
        found[child_id] = delegate_results(stored.rows)
        pending.extend(item["subagent_id"] for text in found[child_id] for item in _results(text))
    return found


def replay_results(
    send: Send, result_text: str, nested: dict[str, list[str]] | None = None, *, _seen: set[str] | None = None
) -> None:
    """Replay the children recorded in a stored ``delegate_task`` result as finished tool calls,
    each followed by its own children from ``nested`` (see :func:`stored_descendants`)."""
    seen = _seen if _seen is not None else set()
    for item in _results(result_text):
        sub_id = item["subagent_id"]
        if sub_id in seen:
            continue
        seen.add(sub_id)
        raw = {"task_index": item.get("task_index"), "model": item.get("model")}
        send(announce(sub_id, str(item.get("goal") or f"task {item.get('task_index', 0)}"), raw))
        out = {
            "tool_calls": item.get("tool_calls"),
            "duration_s": item.get("duration_s"),
            "tokens": item.get("tokens"),
        }
        error = item.get("error")
        send(
            close(
                sub_id,
                str(item.get("status")),
                str(item.get("summary") or ""),
                error if isinstance(error, str) else None,
                out,
            )
        )
        for text in (nested or {}).get(sub_id, []):
            replay_results(send, text, nested, _seen=seen)
