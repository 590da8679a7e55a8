"""Background tasks: a separate one-shot answer on the session's model (agent-core §2.7).

Nothing is written to the transcript; the result arrives as ``BackgroundCompleted``. At most four
run per session; ``Session.close()`` stops them (status ``interrupted``).
"""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING, Literal

from hermes_core.errors import InvalidValue, SessionBusy
from hermes_core.events import BackgroundCompleted

if TYPE_CHECKING:
    from hermes_core.session import Session

MAX_BACKGROUND = 4


def start(session: Session, text: str) -> str:
    """Start a background task and return its id."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidValue("text", message="the background prompt is empty")
    if len(session._background) >= MAX_BACKGROUND:
        raise SessionBusy("background_limit", f"at most {MAX_BACKGROUND} background tasks run per session")
    task_id = "bg_" + secrets.token_hex(6)

    async def work() -> None:
        from hermes_core.content import SeedMessage

        status: Literal["complete", "error", "interrupted"] = "complete"
        result = ""
        ref, _ = session.kernel._session_model(session)
        try:
            result = await session.kernel.one_shot([SeedMessage("user", text)], model=ref)
        except asyncio.CancelledError:
            status = "interrupted"
        except Exception as exc:
            status = "error"
            result = session.kernel.redactor(str(exc))
        finally:
            session._background.pop(task_id, None)
        session.emit(BackgroundCompleted(session_id=session.id, task_id=task_id, text=result, status=status))

    session._background[task_id] = session.kernel.spawn(work(), name=f"hermes-{task_id}")
    return task_id
