"""Prompting and answering
(docs/reference/tui-gateway.md#prompting, #rewind-edit-and-regenerate, #answering-questions): submit, steer,
interrupt, respond."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hermes_core import ALL_KINDS, ImagePart, SessionBusy, TextPart, rpc, traceparent_from_meta
from hermes_tui_gateway import rewind, tenancy
from hermes_tui_gateway import wire_params as wp
from hermes_tui_gateway import wire_results as wr
from hermes_tui_gateway.params import GatewayError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from hermes_core import Session
    from hermes_tui_gateway.gateway import Conn, Gateway, Live, Params

log = logging.getLogger("hermes.tui")
_R = TypeVar("_R")
MAX_STEER = 65536
_APPROVE_WORDS = {"approve": "once", "approved": "once", "allow": "once"}


def _parts(text: str, attachments: list[dict[str, Any]]) -> list[Any]:
    parts: list[Any] = []
    if text.strip():
        parts.append(TextPart(text))
    for item in attachments:
        part = item.get("part")
        if isinstance(part, ImagePart):  # re-attached by a command (/retry), already in memory
            parts.append(part)
            continue
        try:
            data = Path(item["path"]).read_bytes()
        except OSError:
            continue
        parts.append(ImagePart(data=data, mime=item.get("mime", "image/png")))
    return parts


def _spawn(gw: Gateway, coro: Awaitable[_R]) -> asyncio.Future[_R]:
    return asyncio.ensure_future(coro)


def submit(gw: Gateway, conn: Conn, p: Params) -> Awaitable[wr.SubmitResult]:
    """``prompt.submit`` prelude: decide start/queue/steer/refuse before the next frame is read."""
    q = wp.parse(wp.PromptSubmitParams, p)
    live = gw.live(q.session_id)
    text = q.text
    session = live.session
    plan = None
    if rewind.requested(p):
        durable = gw.kernel.sessions.durable
        plan = rewind.validate(session, p, durable)
    if not text.strip() and not live.attachments:
        raise GatewayError(4012, "text required")
    display_kind = "hidden" if q.display_kind == "hidden" else None
    attachments, live.attachments = live.attachments, []
    gw.bind(live, conn)
    # The response goes out before the turn's message.start.
    rpc.after_response(live.stream.hold())
    if plan is not None:
        return _spawn(gw, _rewind_then_submit(gw, live, text, attachments, display_kind, plan, p))
    busy = session.busy
    if busy and live.busy_policy == "steer" and session.status in ("streaming", "working", "waiting"):
        if session.steer(text) == "accepted":
            return _done({"status": "steered"})
    return _spawn(gw, _submit(gw, live, text, attachments, display_kind, busy, traceparent_from_meta(q.meta)))


async def _done_coro(value: _R) -> _R:
    return value


def _done(value: _R) -> Awaitable[_R]:
    return _done_coro(value)


async def _submit(
    gw: Gateway,
    live: Live,
    text: str,
    attachments: list[dict[str, Any]],
    display_kind: str | None,
    busy: bool,
    traceparent: str | None = None,
) -> wr.SubmitResult:
    session = live.session
    content: Any = text if not attachments else await gw.run_blocking(_parts, text, attachments)
    # Decided here, not in the prelude: submit tasks run in arrival order, so an earlier submit
    # of the same read has already started its turn by now.
    busy = busy or session.busy
    try:
        turn = await session.submit(
            content,
            owner="tui",
            merge=True,
            answerable=ALL_KINDS,  # the TUI answers every kind of question
            display_kind=display_kind,
            track_events=False,
            traceparent=traceparent,
            charge=tenancy.charge(),
        )
    except SessionBusy as exc:
        raise GatewayError(4009, "session busy: the queue is full", {"reason": exc.reason}) from exc
    if not busy:
        return {"status": "streaming"}
    position = turn.position
    if live.busy_policy == "interrupt" and session.run is not None:
        gw.kernel.spawn(session.interrupt(discard_queue=False))
    return {"status": "queued", "position": max(position, 1)}


async def _rewind_then_submit(
    gw: Gateway,
    live: Live,
    text: str,
    attachments: list[dict[str, Any]],
    display_kind: str | None,
    plan: rewind.RewindPlan,
    p: Params,
) -> wr.SubmitResult:
    session = live.session
    result = await session.rewind(before_row_id=plan.row_id, allow_empty=True)
    out = await _submit(gw, live, text, attachments, display_kind, False)
    out["survivor_user_row_ids"] = list(result.survivor_user_row_ids)
    if p.get("rebind_survivor_row_ids") is not None:
        out["survivor_row_id_map"] = rewind.survivor_map(session, p.get("rebind_survivor_row_ids"))
    return out


def interrupt(gw: Gateway, conn: Conn, p: Params) -> Awaitable[wr.InterruptResult]:
    """``session.interrupt`` prelude: the interrupt is ordered after any earlier submit."""
    live = gw.live(wp.parse(wp.SessionParams, p).session_id)
    return _spawn(gw, _interrupt(live.session))


async def _interrupt(session: Session) -> wr.InterruptResult:
    done = await session.interrupt(reason="user", discard_queue=True)
    return {
        "status": "interrupted",
        "interrupted": done.was_running,
        "discarded_queue": [item.text for item in done.discarded],
    }


def steer(gw: Gateway, conn: Conn, p: Params) -> wr.SteerResult:
    """``session.steer`` (fast path)."""
    text = p.get("text")
    if not isinstance(text, str) or not text.strip():
        raise GatewayError(4002, "text is required")
    q = wp.parse(wp.TextParams, p)
    text = q.text or ""
    if len(text) > MAX_STEER:
        raise GatewayError(4002, f"steer text is longer than {MAX_STEER} characters")
    live = gw.live(q.session_id)
    verdict = live.session.steer(text)
    if verdict == "accepted":
        return {"status": "queued", "text": text}
    return {"status": "rejected", "text": text, "reason": verdict}


def background(gw: Gateway, conn: Conn, p: Params) -> wr.BackgroundResult:
    """``prompt.background`` (fast path)."""
    q = wp.parse(wp.TextParams, p)
    live = gw.live(q.session_id)
    text = q.text
    if not text or not text.strip():
        raise GatewayError(4012, "text required")
    # A quick task's background.complete must not be read together with this response (the Ink
    # TUI would count the task as still running): it waits behind it, like an answer's events.
    release = _settle_behind_response(gw, live.session.id)
    try:
        task_id = live.session.background(text, answerable=ALL_KINDS, charge=tenancy.charge())
    except SessionBusy as exc:
        release()
        raise GatewayError(4009, "too many background tasks", {"reason": "background_limit"}) from exc
    live.stream.open_tasks.add(task_id)
    return {"task_id": task_id}


# -- answering questions -----------------------------------------------------------------------
def _settle_behind_response(gw: Gateway, session_id: str) -> Callable[[], None]:
    """Hold the session's events until the answer's response is on the wire, and a moment longer.

    What an answer causes (the tool finishing, the reply) can follow within a few milliseconds.
    A host that handles frames one read at a time, like the Ink TUI, acts on the response only
    after every frame of that read, so a ``tool.complete`` read together with the response would
    be handled first (the Ink TUI then calls an answered question "timed out" and shows the turn
    still running). The pause (``tui.answer_settle_s``) lets the response arrive on its own while
    the host is busy redrawing.

    :returns: a call that releases the hold at once (for an answer that did not count).
    """
    live = gw.lives.get(session_id)
    pause = gw.settings.answer_settle_s
    if live is None or pause <= 0:
        return lambda: None
    release = live.stream.hold()
    loop = asyncio.get_running_loop()
    rpc.after_response(lambda: loop.call_later(pause, release))
    return release


def _answer(gw: Gateway, kind: str, request_id: Any, value: str) -> wr.AnswerResult:
    broker = gw.kernel.questions
    request = broker.get(request_id)
    if request is not None and not tenancy.may_answer(gw.lives.all.get(request.session_id)):
        raise GatewayError(4009, f"no pending {kind} request")  # another tenant's: as if unknown
    if request is not None and request.kind != kind:
        raise GatewayError(4009, f"no pending {kind} request")
    release = _settle_behind_response(gw, request.session_id) if request is not None else None
    status = gw.kernel.answer(request_id, value)
    if status != "ok" and release is not None:
        release()
    if status == "ok":
        return {"status": "ok"}
    if status == "expired":
        return {"status": "expired"}
    raise GatewayError(4009, f"no pending {kind} request")


def clarify_respond(gw: Gateway, conn: Conn, p: Params) -> wr.AnswerResult:
    """``clarify.respond``."""
    q = wp.parse(wp.ClarifyRespondParams, p)
    return _answer(gw, "clarify", q.request_id, q.answer)


def sudo_respond(gw: Gateway, conn: Conn, p: Params) -> wr.AnswerResult:
    """``sudo.respond``: the password goes to the waiting tool only."""
    q = wp.parse(wp.SudoRespondParams, p)
    return _answer(gw, "sudo", q.request_id, q.password)


def secret_respond(gw: Gateway, conn: Conn, p: Params) -> wr.AnswerResult:
    """``secret.respond``: a value with a newline is refused before anything is written."""
    q = wp.parse(wp.SecretRespondParams, p)
    rid, value = q.request_id, q.value
    if "\n" in value or "\r" in value:
        raise GatewayError(4002, "a secret value cannot contain a newline")
    return _answer(gw, "secret", rid, value)


def approval_respond(gw: Gateway, conn: Conn, p: Params) -> wr.ApprovalResult:
    """``approval.respond``: by id, else the oldest open approval, or all of them."""
    parsed = wp.parse(wp.ApprovalRespondParams, p)
    sid, raw_choice, rid, everything = parsed.session_id, parsed.choice, parsed.request_id, parsed.all
    choice = raw_choice.strip().lower()
    choice = _APPROVE_WORDS.get(choice, choice)
    live = gw.live(sid)
    open_ = [q for q in live.session.open_questions() if q.kind == "approval"]
    if rid is not None:
        match = [q for q in open_ if q.request_id == rid]
        if not match:
            request = gw.kernel.questions.get(rid)
            if request is None and gw.kernel.answer(rid, "deny") == "expired":
                return {"resolved": 0, "status": "expired"}
            raise GatewayError(4009, "no pending approval request with that id in this session")
        targets = match
    elif everything:
        targets = open_
    else:
        targets = open_[:1]
    if not targets:
        return {"resolved": 0}
    for q in targets:
        allowed = tuple(q.choices or ("once", "deny"))
        if choice not in allowed:
            raise GatewayError(
                4002, f"choice {raw_choice!r} was not offered", {"key": "choice", "allowed": list(allowed)}
            )
    release = _settle_behind_response(gw, live.session.id)
    resolved = 0
    for q in targets:
        if gw.kernel.answer(q.request_id, choice) == "ok":
            resolved += 1
    if not resolved:
        release()
    return {"resolved": resolved}


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""
    gw.ordered["prompt.submit"] = lambda conn, p: submit(gw, conn, p)
    gw.ordered["session.interrupt"] = lambda conn, p: interrupt(gw, conn, p)
    gw.fast.update(
        {
            "session.steer": lambda conn, p: steer(gw, conn, p),
            "prompt.background": lambda conn, p: background(gw, conn, p),
            "clarify.respond": lambda conn, p: clarify_respond(gw, conn, p),
            "sudo.respond": lambda conn, p: sudo_respond(gw, conn, p),
            "secret.respond": lambda conn, p: secret_respond(gw, conn, p),
            "approval.respond": lambda conn, p: approval_respond(gw, conn, p),
        }
    )
