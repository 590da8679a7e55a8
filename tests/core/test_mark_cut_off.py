"""``Session.mark_cut_off`` (docs/reference/core.md#rewind-and-reconcile): a host that told its
client a turn did not complete marks the stored reply cut off; storage, the live session and the
next model request all see it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core import InvalidValue, cut_off_reason
from hermes_core.history import CUT_OFF_NOTES, to_messages
from hermes_core.testing import make_kernel


async def test_a_reply_marked_cut_off_is_cut_off_everywhere(tmp_path: Path) -> None:
    kernel = make_kernel(
        entry_points=["mock", "sqlite"],
        settings={"model": "mock:echo", "data_dir": str(tmp_path), "storage": {"backend": "sqlite"}},
    )
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        done = await (await session.submit("hello there", owner="me")).outcome
        assert done.status == "complete"
        reply = next(r for r in session.rows if r.role == "assistant")
        assert cut_off_reason(reply) is None
        with pytest.raises(InvalidValue):
            await session.mark_cut_off(reply.id, "lost")
        with pytest.raises(InvalidValue):
            await session.mark_cut_off(session.rows[0].id)  # the user's row
        await session.mark_cut_off(reply.id)
        await session.mark_cut_off(reply.id)  # once is enough; again changes nothing
        live = next(r for r in session.rows if r.id == reply.id)
        stored = next(r for r in await kernel.storage.load_rows(session.id) if r.id == reply.id)
        assert cut_off_reason(live) == cut_off_reason(stored) == "interrupted"
        # The model is told, at the next turn, that this reply was not finished.
        told = [m.content for m in to_messages(session.rows) if m.role == "assistant"]
        assert told == ["You said: hello there\n\n" + CUT_OFF_NOTES["interrupted"]]
