"""The opening of a turn: the user row, ``TurnStarted``, and the first model call sent early.

The row is written while the first call goes out (docs/reference/core.md#the-turn-loop): the call's request
leaves first, the write follows one loop pass later, and nothing of the call is read, nor any event of
it emitted, before the row is stored and ``TurnStarted`` is out
(docs/reference/core.md#the-turn-loop, #events).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from hermes_core import vision
from hermes_core.content import ImagePart, TextPart
from hermes_core.errors import HermesError, StorageError
from hermes_core.events import TurnOutcome
from hermes_core.history import materialize
from hermes_core.outlive import outlive, retrieve
from hermes_core.storage import NewRow, Row
from hermes_core.turn.head_start import HeadStart
from hermes_core.turn.model_call import TurnFailed

if TYPE_CHECKING:
    from hermes_core.turn import TurnRun


async def reconcile_transcript(run: TurnRun) -> None:
    """Reconcile the stored history with the head item's client transcript, if it brought one.

    This runs when the item reaches the head of the queue, so a prompt that waited behind
    another turn is aligned with the history that turn left, not the one it arrived to.
    """
    messages = run.items[0].reconcile
    if messages is None:
        return
    from hermes_core.session.ops import reconcile_rows

    try:
        await reconcile_rows(run.session, messages)
    except StorageError as exc:
        run.emit_started()
        raise TurnFailed(
            TurnOutcome(status="error", reason="tool_crash", layer="storage", message=str(exc))
        ) from exc


async def persist_user_row(run: TurnRun) -> HeadStart | None:
    """Store the user row (then emit ``TurnStarted``), opening the first model call meanwhile.

    :param run: the turn.
    :returns: the opened first call, or None when the turn makes it the ordinary way.
    """
    # Tool servers still connecting (MCP) get up to their connect timeout, so the model sees their
    # tools from the first turn; the ones that did not make it are named once per session.
    run.warnings.extend(await run.kernel.tool_sources.settle(run.session.id))
    row = user_row(run)
    head: HeadStart | None = None
    writing: asyncio.Future[list[Row]] | None = None
    try:
        if run.kernel.records.shared:
            # Storage on a database server: the write is a round trip, not work for this loop,
            # and the first frame waits for it (a stored prompt is shown, never one that may be
            # lost). Its query leaves first, and the call goes out while it is under way.
            writing = begin_user_row(run, row)
        head = await open_first_call(run, row)
        if writing is None and head is not None and _write_takes_loop(run):
            # A write that would run on the loop itself (SQLite inline, while its thread is
            # idle) starts once the request is on its way (``issued``): started beside the call,
            # it ran before the request's own write, which aiohttp makes a loop pass later, and
            # held the request back by as long (0.3-0.5 ms at c=1). A write that goes elsewhere
            # (a burst's, to the database thread with the others) starts at once.
            await head.issued
        # Without that wait the write's task still runs after the call's task (made first): a
        # local write queued before the call waited behind the loop's ~0.7 ms of HTTP client
        # work, and so finished (with TurnStarted and the first delta) after a fast upstream's
        # first chunk had arrived.
        await end_user_row(run, writing if writing is not None else begin_user_row(run, row))
    except BaseException:
        if writing is not None and not writing.done():
            writing.add_done_callback(retrieve)  # the turn reports the first failure
        if head is not None:
            await head.discard()
        raise
    return head


def _write_takes_loop(run: TurnRun) -> bool:
    """Whether the session's storage would run a write started now on the event loop
    (``hermes_core.storage.LoopWrites``; False for a backend that does not say)."""
    says = getattr(run.kernel.storage, "writes_on_loop", None)
    return bool(says()) if says is not None else False


async def open_first_call(run: TurnRun, row: NewRow) -> HeadStart | None:
    """Open the first model call before the user row is stored, when nothing else must come first."""
    session = run.session
    kernel = run.kernel
    if run.needs_compress():
        return None  # compaction rewrites the history the call would carry
    ref, source = kernel.models.for_turn(session, run.items)
    if not ref or source == "once":
        return None  # the ordinary path reports (or consumes) these
    try:
        resolved = await kernel.models.resolve_turn_ref(session, run.items, ref, source)
        if kernel.hub.missing_key_hint(resolved.provider) is not None:
            return None
        provider = kernel.hub.get(resolved.provider)
    except HermesError:
        return None
    run.resolved = resolved
    pending = materialize(session.id, row, 0)
    await vision.settle(run, pending)
    request = run.build_request(pending)
    if run.budget.active:
        if run.budget.refused is not None:
            return None  # the ordinary path stores the prompt, then reports the refusal
        # The reservation's round trip runs alongside the user row's write; the request is sent
        # only once it is held (docs/reference/budgets.md#in-a-turn).
        request = run.budget.prepare(request)
        return HeadStart(provider, request, gate=run.budget.hold_head(request))
    return HeadStart(provider, request)


def user_row(run: TurnRun) -> NewRow:
    """Build the one user row of the turn's queue items (texts joined, images kept)."""
    items = run.items
    parts: list[Any] = []
    texts = [i.text for i in items]
    for item in items:
        parts.extend(p for p in item.parts if isinstance(p, ImagePart))
    text = "\n\n".join(texts)
    all_parts = tuple([TextPart(text), *parts]) if parts else ()
    return NewRow(role="user", content=text, parts=all_parts, display_kind=items[0].display_kind)


def begin_user_row(run: TurnRun, row: NewRow) -> asyncio.Future[list[Row]]:
    """Start storing the user row (deriving the title on a first turn); :func:`end_user_row`
    waits for it."""
    session = run.session
    first_turn = not any(r.role == "user" for r in session.rows)
    if first_turn:
        from hermes_core.titles import derive_title_if_needed

        derive_title_if_needed(session, row.content)
    return session.start_append([row])


async def end_user_row(run: TurnRun, writing: asyncio.Future[list[Row]]) -> None:
    """Wait for the user row :func:`begin_user_row` started, then emit ``TurnStarted``."""
    session = run.session
    try:
        made = await outlive(writing)
    except StorageError as exc:
        run.emit_started()
        raise TurnFailed(
            TurnOutcome(status="error", reason="tool_crash", layer="storage", message=str(exc))
        ) from exc
    except asyncio.CancelledError:
        # The write finished before the cancel was re-raised (it is shielded).
        run.user_row_id = session.rows[-1].id if session.rows else None
        run.emit_started()
        raise
    run.user_row_id = made[0].id
    run.emit_started()
