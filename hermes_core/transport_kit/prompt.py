"""Run one prompt for a transport: the turn's events, ready to encode, with its questions routed
to a callback or denied at once (docs/writing-transports.md).

:func:`run_prompt` is the whole "submit, stream, answer, clean up" loop of a simple host;
:func:`event_payload` turns any event into plain JSON-ready data for a wire format.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from hermes_core.errors import InvalidValue
from hermes_core.events import ALL_KINDS, AnyEvent, Event, QuestionRequested, TurnCompleted

if TYPE_CHECKING:
    from hermes_core.content import Part
    from hermes_core.kernel import Kernel
    from hermes_core.session.live import Session

log = logging.getLogger("hermes.transport")

#: Answers one question: the choice (``once``, ``session``, ``always``, ``deny`` for an approval)
#: or the text (clarify, sudo, secret); None means "no answer" (an approval is then denied).
Answerer = Callable[[QuestionRequested], Awaitable[str | None] | str | None]

DEFAULT_KINDS = frozenset({"approval", "clarify"})


async def run_prompt(
    session: Session,
    content: str | Sequence[Part],
    *,
    owner: str,
    answer: Answerer | None = None,
    kinds: Iterable[str] = DEFAULT_KINDS,
    model: str | None = None,
) -> AsyncGenerator[AnyEvent, None]:
    """Submit ``content`` to ``session`` and yield the turn's events, ``TurnStarted`` … ``TurnCompleted``.

    :param owner: who submits (recorded with the queued item).
    :param answer: called (as a task, so events keep flowing) for each question of a kind in
        ``kinds``; its result is passed to ``Kernel.answer``. Without it the turn declares no
        answerer: every question closes at once as ``no_answerer`` and an approval is denied.
    :param kinds: the question kinds ``answer`` handles; others close as ``no_answerer``.
    :param model: a per-turn model reference, as for ``Session.submit``.
    :raises InvalidValue: a kind that does not exist.

    Stopping early (closing the generator, e.g. ``aclose()`` after a ``break``) withdraws the
    prompt if it is still queued and otherwise interrupts the turn and waits until it has ended,
    so no turn runs on that nobody reads.
    """
    answerable = frozenset(kinds) if answer is not None else frozenset()
    if not answerable <= ALL_KINDS:
        raise InvalidValue("kinds", sorted(ALL_KINDS))
    turn = await session.submit(content, owner=owner, answerable=answerable, model=model)
    tasks: set[asyncio.Task[None]] = set()
    finished = False
    try:
        async for event in turn.events():
            yield event  # first, so the host has shown the question before an answer can close it
            if isinstance(event, TurnCompleted):
                finished = True
            elif isinstance(event, QuestionRequested) and answer is not None and event.kind in answerable:
                task = asyncio.create_task(_answer(session.kernel, answer, event))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
    finally:
        for task in list(tasks):
            task.cancel()
        if not finished and not turn.outcome.done() and not session.cancel_queued(turn.item_id):
            await session.interrupt(reason="system")
            await asyncio.shield(turn.outcome)  # settled: the session is free again on return


async def _answer(kernel: Kernel, answer: Answerer, question: QuestionRequested) -> None:
    try:
        value = answer(question)
        if isinstance(value, Awaitable):
            value = await value
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("answering question %s failed; it gets no answer", question.request_id)
        value = None
    if value is None:
        value = "deny" if question.kind == "approval" else ""
    kernel.answer(question.request_id, str(value))  # "expired" when it closed meanwhile: fine


def event_payload(event: Event) -> dict[str, Any]:
    """Return ``event`` as plain data (``type`` = the class name, then every field), ready for
    ``json.dumps``: nested records become objects, tuples lists, paths strings."""
    payload: dict[str, Any] = {"type": type(event).__name__}
    for item in dataclasses.fields(event):
        payload[item.name] = _plain(getattr(event, item.name))
    return payload


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, bytes):  # an image's data
        return base64.b64encode(value).decode("ascii")
    return str(value)
