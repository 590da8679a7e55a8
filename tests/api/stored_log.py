"""What a killed API server's session log holds, read from its storage by a kernel in the test
process (docs/reference/api-server.md#resume-after-a-restart): the chaos tests check a client
never saw more than that, and that the restart numbers the cut-off turn's end right after it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes_core import TextDelta, TurnCompleted, TurnStarted
from tests.chaos import gaps, reader_kernel, whole_log


@dataclass(frozen=True)
class StoredTurn:
    """The stored part of a session's only turn, cut off by a ``kill -9``."""

    #: The text deltas the log stored, in order (a run's ``message.delta``s, a response's
    #: ``response.output_text.delta``s, one each).
    deltas: list[str]
    #: The log's stored end (the newest number it holds).
    end: int

    @property
    def text(self) -> str:
        return "".join(self.deltas)


async def stored_turn(storage: dict[str, Any], session_id: str) -> StoredTurn:
    """Read the session's newest turn as the killed server left it: no gap, no end."""
    kernel = reader_kernel(storage)
    async with kernel.running():
        items = await whole_log(kernel, session_id)
    assert items and not gaps(items), items
    starts = [n for n, i in enumerate(items) if isinstance(i, TurnStarted)]
    assert starts, items
    turn = items[starts[-1] :]
    assert not [i for i in turn if isinstance(i, TurnCompleted)], "the turn was cut off"
    deltas = [i.text for i in turn if isinstance(i, TextDelta) and i.text]
    return StoredTurn(deltas, items[-1].seq)
