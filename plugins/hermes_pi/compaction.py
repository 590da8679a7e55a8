"""pi's ``compact`` command and compaction events over the core's compression
(docs/reference/pi.md#compaction).

``compact`` aborts a running run first (as pi does), then compresses: older turns become one
summary row, the latest turn stays. The result names the first kept entry and estimates tokens the
way pi does (characters / 4). A compaction the core runs on its own before a turn (the context
went past ``compression.auto_threshold``) is reported as ``compaction_start``/``compaction_end``
with reason ``threshold``, and also under pi's older names ``auto_compaction_start``/``_end``,
which pi-acp reads. Either way ``entry_appended`` then carries the new ``compaction`` entry, the
one entry of a Hermes session that no message event announces.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hermes_pi.entries import compaction_entry
from hermes_pi.wire import BadCommand

if TYPE_CHECKING:
    from hermes_core import Row, Session

Send = Callable[[dict[str, Any]], None]


def estimate_tokens(rows: Sequence[Row]) -> int:
    """Estimate the tokens of a transcript as pi does: characters divided by four."""
    return sum(len(r.content) + len(r.reasoning or "") for r in rows) // 4


def result_object(session: Session, summary_row_id: int, tokens_before: int) -> dict[str, Any]:
    """Build pi's ``CompactionResult`` for the summary row ``summary_row_id``."""
    rows = session.rows
    summary = next((r for r in rows if r.id == summary_row_id), None)
    kept = [r for r in rows if r.id != summary_row_id and r.display_kind != "summary"]
    first_kept = min((r for r in kept), key=lambda r: (r.position, r.id), default=None)
    return {
        "summary": summary.content if summary is not None else "",
        "firstKeptEntryId": str(first_kept.id if first_kept is not None else summary_row_id),
        "tokensBefore": tokens_before,
        "estimatedTokensAfter": estimate_tokens(rows),
        "details": {},
    }


async def compact(session: Session, instructions: str | None, send: Send) -> dict[str, Any]:
    """Compress ``session`` (idle) and report it as pi's manual compaction.

    :raises BadCommand: nothing to compact, or the summary call failed.
    """
    before = list(session.rows)
    tokens_before = session.usage.context_used or estimate_tokens(before)
    send({"type": "compaction_start", "reason": "manual"})
    try:
        result = await session.compress(focus_topic=instructions)
    except Exception as exc:
        message = f"Compaction failed: {exc}"
        send(_failed("manual", message))
        raise BadCommand(message) from None
    if result.summary_row_id is None:
        message = "Nothing to compact (session too small)"
        send(_failed("manual", f"Compaction failed: {message}"))
        raise BadCommand(message)
    data = result_object(session, result.summary_row_id, tokens_before)
    send({"type": "compaction_end", "reason": "manual", "result": data, "aborted": False, "willRetry": False})
    _announce(session, result.summary_row_id, send)
    return data


def _announce(session: Session, summary_row_id: int, send: Send) -> None:
    """Send ``entry_appended`` for the compaction entry: the one entry no message event announces."""
    summary = next((r for r in session.rows if r.id == summary_row_id), None)
    if summary is not None:
        send({"type": "entry_appended", "entry": compaction_entry(summary, session.rows)})


def automatic(session: Session, send: Send) -> None:
    """Report a compaction the core ran before a turn (the newest summary row)."""
    summary = max((r for r in session.rows if r.display_kind == "summary"), key=lambda r: r.id, default=None)
    if summary is None:
        return
    data = result_object(session, summary.id, session.usage.context_used or 0)
    for prefix in ("", "auto_"):
        send({"type": f"{prefix}compaction_start", "reason": "threshold"})
    for prefix in ("", "auto_"):
        send(
            {
                "type": f"{prefix}compaction_end",
                "reason": "threshold",
                "result": data,
                "aborted": False,
                "willRetry": False,
            }
        )
    _announce(session, summary.id, send)


def _failed(reason: str, message: str) -> dict[str, Any]:
    return {
        "type": "compaction_end",
        "reason": reason,
        "aborted": False,
        "willRetry": False,
        "errorMessage": message,
    }
