"""Background tasks: a separate one-shot agent on the session's model, cwd and profile
(docs/reference/core.md#background-tasks-and-one-shot-calls).

The task runs the ordinary turn loop — tools, approvals, questions — on a private, unpersisted
copy of the session with no shared history. Nothing reaches the transcript. Its questions are
emitted on the parent session with ``task_id`` set, and the parent's interrupt leaves them open;
``Session.close()`` stops the task (status ``interrupted``). It ends with ``BackgroundCompleted``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from hermes_core.errors import InvalidValue, SessionBusy
from hermes_core.events import BackgroundCompleted
from hermes_core.session.live import Session
from hermes_core.storage import Row

if TYPE_CHECKING:
    from hermes_core.budgets import ChargeTo

MAX_BACKGROUND = 4


class TaskSession(Session):
    """A throw-away session for one background task: rows live in memory only."""

    def __init__(self, parent: Session, task_id: str) -> None:
        record = dataclasses.replace(parent.record, title=parent.record.title or "background task")
        super().__init__(parent.kernel, record, [], persisted=True, memory_only=True)
        self.parent = parent
        self.task_id = task_id
        self.file_access = parent.file_access
        self.title_refine_started = True  # never refine a title for a task


def start(
    session: Session, text: str, *, answerable: frozenset[str] = frozenset(), charge: ChargeTo | None = None
) -> str:
    """Start a background task for ``session`` and return its id (``bg_<6 hex>``).

    :param answerable: the question kinds the host answers for the task (none by default).
    :param charge: who the task's turn charges (None: the configured default).
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidValue("text", message="the background prompt is empty")
    if len(session.background_tasks) >= MAX_BACKGROUND:
        raise SessionBusy("background_limit", f"at most {MAX_BACKGROUND} background tasks run per session")
    task_id = "bg_" + secrets.token_hex(3)
    while task_id in session.background_tasks:
        task_id = "bg_" + secrets.token_hex(3)
    task_session = TaskSession(session, task_id)

    async def work() -> None:
        status: Literal["complete", "error", "interrupted"] = "complete"
        result = ""
        try:
            turn = await task_session.submit(
                text, owner=f"task:{task_id}", answerable=answerable, charge=charge
            )
            outcome = await turn.outcome
            result = _final_text(task_session.rows)
            if outcome.status == "interrupted":
                status = "interrupted"
            elif outcome.status == "error":
                status = "error"
                result = f"error: {outcome.message or outcome.reason}"
        except asyncio.CancelledError:
            status = "interrupted"
            await task_session.interrupt(reason="system", discard_queue=True)
        except Exception as exc:
            status = "error"
            result = f"error: {session.kernel.redactor(str(exc))}"
        finally:
            session.background_tasks.pop(task_id, None)
        session.emit(BackgroundCompleted(session_id=session.id, task_id=task_id, text=result, status=status))

    session.background_tasks[task_id] = session.kernel.spawn(work(), name=f"hermes-{task_id}")
    return task_id


def _final_text(rows: Sequence[Row]) -> str:
    for row in reversed(rows):
        if row.role == "assistant" and not row.tool_calls:
            return row.content
    return ""
