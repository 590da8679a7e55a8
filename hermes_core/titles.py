"""Session titles: cleaning, the derived title at the first turn, and refinement
(docs/reference/core.md#branch-compress-titles-model-switch)."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING

from hermes_core.errors import InvalidValue
from hermes_core.events import TitleChanged

if TYPE_CHECKING:
    from hermes_core.kernel import Kernel
    from hermes_core.session.live import Session
    from hermes_core.storage import SessionRecord

log = logging.getLogger("hermes.titles")
MAX_TITLE = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def clean_title(title: str) -> str:
    """Validate a title: at most 200 characters, no control characters, not empty."""
    if not isinstance(title, str):
        raise InvalidValue("title", "a string")
    text = title.strip()
    if not text:
        raise InvalidValue("title", message="the title is empty")
    if len(text) > MAX_TITLE:
        raise InvalidValue("title", message=f"the title is longer than {MAX_TITLE} characters")
    if _CONTROL.search(text):
        raise InvalidValue("title", message="the title contains control characters")
    return text


def derive(text: str) -> str:
    """Return the first six words of ``text``, as a title."""
    words = _CONTROL.sub(" ", text).split()
    return " ".join(words[:6])[:MAX_TITLE]


def derive_title_if_needed(session: Session, first_text: str) -> None:
    """At the first turn, give an untitled session its derived title synchronously."""
    if session.record.title or session.pending_title:
        return
    title = derive(first_text)
    if not title:
        return
    session.set_pending_title(title, "derived")
    session.emit(TitleChanged(session_id=session.id, turn_id=None, title=title, origin="derived"))


def maybe_refine(kernel: Kernel, session: Session) -> None:
    """After the first turn, ask the model once for a better title (``titles.refine``)."""
    if not kernel.settings.titles.refine or session.record.title_origin != "derived":
        return
    if session.title_refine_started or sum(1 for r in session.rows if r.role == "user") != 1:
        return
    session.title_refine_started = True

    async def refine() -> None:
        from hermes_core.budget_calls import charge_for_session
        from hermes_core.errors import BudgetExceeded
        from hermes_core.meta_prompts import title_request

        ref, _ = kernel.models.for_session(session)
        ask = title_request(session.rows)
        # Charged like the session's turns (docs/reference/budgets.md#outside-a-turn).
        charge = charge_for_session(kernel.budgets, session)
        try:
            text = await asyncio.wait_for(
                kernel.models.one_shot(
                    ask.messages,
                    model=ref,
                    purpose=ask.purpose,
                    system=ask.system,
                    options=ask.options,
                    charge=charge,
                ),
                30,
            )
            title = clean_title(derive_line(text))
        except BudgetExceeded as exc:
            log.info("title of %s not refined: %s", session.id, exc)
            return
        except Exception as exc:
            log.debug("title refinement failed: %s", exc)
            return
        if session.record.title_origin != "derived" or title == (session.record.title or ""):
            return
        await write_refined(kernel, session, title)

    kernel.spawn(refine(), name=f"hermes-title-{session.id}")


async def write_refined(kernel: Kernel, session: Session, title: str) -> None:
    """Store a refined title under the session's writer lease and tell its subscribers.

    The model may answer after the host released the session (the API server closes a session
    when its turn ends): the title is then written under the lease taken for this write alone.
    While another process holds the lease, or the title changed meanwhile, the refinement is
    dropped (the derived title stays); nothing is raised.
    """
    from hermes_core.errors import SessionInUse

    def still_derived(record: SessionRecord) -> bool:
        return record.title_origin == "derived" and record.title != title

    try:
        written = await kernel.sessions.update_record(
            session.id, {"title": title, "title_origin": "refined"}, only_if=still_derived
        )
    except SessionInUse as exc:
        log.info("refined title of %s dropped: %s holds the session now", session.id, exc.owner)
        return
    except Exception as exc:
        log.warning("refined title of %s could not be stored: %s", session.id, exc)
        return
    if not written:
        return
    live = kernel.sessions.get(session.id) or session
    live.emit(TitleChanged(session_id=session.id, title=title, origin="refined"))


def derive_line(text: str) -> str:
    """Return the first non-empty line of a model's title answer, without quotes."""
    for line in text.splitlines():
        line = line.strip().strip("\"'").strip()
        if line:
            return line[:MAX_TITLE]
    return ""
