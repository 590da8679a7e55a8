"""History operations on a live session: rewind, reconcile, compress, branch
(docs/reference/core.md#sessions-and-storage).

Each writes storage first, in one transaction, and only then changes memory. Nothing is ever
deleted: dropped rows are soft-archived with a reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core.errors import InvalidValue, ProviderError, RewindError, SessionBusy, StorageError
from hermes_core.history import is_user_turn, project, user_row_ids
from hermes_core.session.compare import comparable_messages, comparable_rows
from hermes_core.session.types import BranchSeed, CompressResult, ReconcileResult, RewindResult
from hermes_core.storage import NewRow, Row

if TYPE_CHECKING:
    from hermes_core.budgets import ChargeTo
    from hermes_core.content import SeedMessage
    from hermes_core.session.live import Session


def _turn_data(session: Session, ordinal: int | None, row_id: int | None) -> dict[str, Any]:
    count = sum(1 for r in session.rows if is_user_turn(r))
    data: dict[str, Any] = {
        "user_turn_count": count,
        "ordinal": ordinal,
        "segment_ordinal": ordinal,
        "prefix_user_count": 0,
    }
    if row_id is not None:
        data["row_id"] = row_id
    return data


def ordinal_of(session: Session, row_id: int) -> int | None:
    """Return the user ordinal of an active user row, or None."""
    ordinal = 0
    for row in session.rows:
        if is_user_turn(row):
            if row.id == row_id:
                return ordinal
            ordinal += 1
    return None


def row_at_ordinal(session: Session, ordinal: int) -> Row | None:
    """Return the active user row at a 0-based user ordinal."""
    users = [r for r in session.rows if is_user_turn(r)]
    return users[ordinal] if 0 <= ordinal < len(users) else None


async def rewind(session: Session, *, before_row_id: int, allow_empty: bool) -> RewindResult:
    """Soft-archive the target user turn and everything after it (persisted first)."""
    if session.busy:
        raise RewindError(
            4009,
            "session busy — interrupt and wait for message.complete before rewinding",
            {"reason": "busy"},
        )
    ordinal = ordinal_of(session, before_row_id) if isinstance(before_row_id, int) else None
    if ordinal is None:
        raise RewindError(
            4018, "unknown, stale, archived or foreign row id", _turn_data(session, None, before_row_id)
        )
    if ordinal == 0 and not allow_empty:
        raise RewindError(4028, "this rewind would empty the transcript; confirm_empty_truncate is required")
    target = next(r for r in session.rows if r.id == before_row_id)
    doomed = [r.id for r in session.rows if (r.position, r.id) >= (target.position, target.id)]
    try:
        await session.kernel.storage.rewrite(session.id, archive_row_ids=doomed, archived_reason="rewind")
    except Exception as exc:
        raise RewindError(5008, f"could not persist the rewind: {exc}") from exc
    keep = [r for r in session.rows if r.id not in set(doomed)]
    session.replace_rows(keep)
    session.mark_changed("history")
    return RewindResult(len(doomed), list(user_row_ids(keep)), ordinal)


async def reconcile(session: Session, messages: Sequence[SeedMessage]) -> ReconcileResult:
    """Align stored history with a client-sent transcript (API chat bodies)."""
    if session.busy:
        raise SessionBusy("busy")
    return await reconcile_rows(session, messages)


async def reconcile_rows(session: Session, messages: Sequence[SeedMessage]) -> ReconcileResult:
    """Align stored history with ``messages``, without the busy check.

    For the turn that carries a client transcript (``Session.submit(reconcile=…)``): it runs
    when that turn reaches the head of the queue, the one moment no other turn can write.
    """
    stored = comparable_rows(session.rows)
    body = comparable_messages(messages)
    common = 0
    while common < len(stored) and common < len(body) and stored[common][:2] == body[common]:
        common += 1
    # A match that ends inside a summary's originals counts as matching through the summary.
    keep_rows: set[int] = set()
    for entry in stored[:common]:
        keep_rows.update(r.id for r in entry[2])
    divergent: list[int] = []
    if common < len(stored):
        first_bad = stored[common][2][0]
        if first_bad.id in keep_rows:
            # Divergence inside a summary's originals: keep the summary, drop what follows it.
            first_bad = next(
                (r for r in session.rows if (r.position, r.id) > (first_bad.position, first_bad.id)), None
            )  # type: ignore[assignment]
        if first_bad is not None:
            divergent = [
                r.id for r in session.rows if (r.position, r.id) >= (first_bad.position, first_bad.id)
            ]
    new = [m for m in messages if m.role in ("user", "assistant")][common:]
    append = [NewRow(role=m.role, content=m.text, parts=m.parts) for m in new]
    if not divergent and not append:
        return ReconcileResult(common, 0, 0)
    if not session.persisted:
        made = await session.append_rows(append)
        return ReconcileResult(common, 0, len(made))
    ids = await session.kernel.storage.rewrite(
        session.id, archive_row_ids=divergent, archived_reason="reconcile", append=append
    )
    from hermes_core.history import materialize

    keep = [r for r in session.rows if r.id not in set(divergent)]
    keep.extend(materialize(session.id, n, i) for n, i in zip(append, ids, strict=True))
    session.replace_rows(keep)
    return ReconcileResult(common, len(divergent), len(append))


async def compress(
    session: Session, *, focus_topic: str | None = None, auto: bool = False, charge: ChargeTo | None = None
) -> CompressResult:
    """Summarise older turns into one summary row, archiving them in place.

    :param auto: the loop's own compaction before a turn (the session is busy with that turn).
    :param charge: who pays for the summary call (None: who the session's turns pay; see
        docs/reference/budgets.md#outside-a-turn).
    :raises BudgetExceeded: the summary call does not fit in a bucket; nothing changed.
    """
    from hermes_core.budget_calls import charge_for_session
    from hermes_core.meta_prompts import summary_request

    if session.busy and not auto:
        raise SessionBusy("busy", "cannot compress while a turn is running")
    rows = session.rows
    users = [r for r in rows if is_user_turn(r)]
    before = len(project(rows))
    if len(users) < 2:
        return CompressResult(None, 0, before, before, "")
    # Keep the latest user turn and what follows; summarise everything before it.
    cut = users[-1]
    older = [r for r in rows if (r.position, r.id) < (cut.position, cut.id)]
    if not older:
        return CompressResult(None, 0, before, before, "")
    ask = summary_request(older, focus_topic)
    ref, _ = session.kernel.models.for_session(session)
    summary = (
        await session.kernel.models.one_shot(
            ask.messages,
            model=ref,
            purpose=ask.purpose,
            system=ask.system,
            options=ask.options,
            charge=charge_for_session(session.kernel.budgets, session, charge),
        )
    ).strip()
    if not summary:
        raise ProviderError("upstream", "the model answered the summary request with no text")
    originals: list[Any] = []
    for r in project(older):
        if r.display_kind == "summary":  # an earlier summary stands for its own originals
            originals.extend(r.meta.get("originals", []))
        elif r.role in ("user", "assistant") and r.display_kind is None:
            originals.append({"role": r.role, "text": r.content})
    first = older[0]
    row = NewRow(
        role="system",
        content=summary,
        display_kind="summary",
        position=first.position,
        meta={"originals": originals, "archived": len(older)},
    )
    try:
        ids = await session.kernel.storage.rewrite(
            session.id, archive_row_ids=[r.id for r in older], archived_reason="compress", append=[row]
        )
    except Exception as exc:
        raise StorageError(f"could not store the compression: {exc}") from exc
    from hermes_core.history import materialize

    made = materialize(session.id, row, ids[0])
    keep = [made] + [r for r in rows if r not in older]
    session.replace_rows(keep)
    session.mark_changed("history")
    return CompressResult(made.id, len(older), before, len(project(keep)), summary)


async def branch(
    session: Session,
    *,
    owner: str,
    count: int | None,
    up_to_row_id: int | None,
    title: str | None,
    cwd: Path | None,
) -> Session:
    """Copy the active rows (or a prefix) into a new session with this one as parent."""
    from hermes_core.titles import clean_title

    if count is not None and up_to_row_id is not None:
        raise InvalidValue("count", message="give count or up_to_row_id, not both")
    rows = [r for r in session.rows]
    if session.run is not None:
        # Only completed rows of a running source: up to the last finished exchange.
        last_done = max((r.id for r in rows if r.role == "assistant" and not r.tool_calls), default=0)
        rows = [r for r in rows if r.id <= last_done]
    visible = project(rows)
    if count is not None:
        if not isinstance(count, int) or count < 0:
            raise InvalidValue("count", "a non-negative integer")
        if count < len(visible):
            limit = visible[count - 1] if count else None
            rows = (
                [] if limit is None else [r for r in rows if (r.position, r.id) <= (limit.position, limit.id)]
            )
    elif up_to_row_id is not None:
        target = next((r for r in rows if r.id == up_to_row_id), None)
        if target is None:
            raise InvalidValue("up_to_row_id", message=f"no active row {up_to_row_id} in this session")
        rows = [r for r in rows if (r.position, r.id) <= (target.position, target.id)]
    rows = _drop_dangling(rows)
    name = (
        clean_title(title)
        if title
        else f"{session.record.title or session.pending_title or 'Untitled'} (branch)"[:200]
    )
    record = session.record
    seed = BranchSeed(
        model=record.model,
        provider=record.provider,
        title=name,
        reasoning_effort=record.reasoning_effort,
        system_overlay=record.system_overlay,
        rows=tuple(rows),
    )
    return await session.kernel.sessions.open(
        source=record.source,
        owner=owner,
        cwd=cwd or session.cwd,
        profile=session.profile,
        parent_session_id=session.id,
        branch=seed,
    )


async def copy_rows(child: Session, rows: Sequence[Row]) -> None:
    """Store a new session with copies of ``rows``; tool rows are relinked to the renamed core
    call ids (``Sessions.open`` calls this for a branch).

    Rows go in groups that end at an assistant tool-call row, so the new call ids are known
    before the tool results that refer to them are written.
    """
    if not rows:
        await child.append_rows([])  # stores the session itself
        return
    renamed: dict[str, str] = {}
    group: list[NewRow] = []
    sources: list[Row] = []
    for row in rows:
        group.append(
            NewRow(
                role=row.role,
                content=row.content,
                parts=row.parts,
                tool_calls=tuple(dataclasses.replace(c, call_id="") for c in row.tool_calls),
                call_id=renamed.get(row.call_id or "", row.call_id),
                provider_call_id=row.provider_call_id,
                tool_name=row.tool_name,
                display_kind=row.display_kind,
                model=row.model,
                reasoning=row.reasoning,
                meta=dict(row.meta),
                created_at=row.created_at,
            )
        )
        sources.append(row)
        if row.tool_calls:
            made = await child.append_rows(group)
            for before, after in zip(sources, made, strict=True):
                for c_old, c_new in zip(before.tool_calls, after.tool_calls, strict=True):
                    renamed[c_old.call_id] = c_new.call_id
            group, sources = [], []
    if group:
        await child.append_rows(group)


def _drop_dangling(rows: list[Row]) -> list[Row]:
    """Drop a trailing assistant tool-call row whose results are missing."""
    answered = {r.provider_call_id for r in rows if r.role == "tool"}
    while rows and rows[-1].role == "assistant" and rows[-1].tool_calls:
        if all(c.provider_call_id in answered for c in rows[-1].tool_calls):
            break
        rows = rows[:-1]
    while rows and rows[-1].role == "tool":
        # Tool rows without their assistant call row would be orphans.
        ids = {c.provider_call_id for r in rows if r.role == "assistant" for c in r.tool_calls}
        if rows[-1].provider_call_id in ids:
            break
        rows = rows[:-1]
    return rows
