"""A session is made of parts that own their fields; its public API stays one object.

``Session.submit`` and the other part methods are offered on the session with the part's own
signature and docstring, and branching opens the new session seeded with the source's settings
and rows instead of writing the new session's fields from outside.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
from pathlib import Path

from hermes_core import Kernel, Session
from hermes_core.session.controls import SessionControls
from hermes_core.session.forward import forward
from hermes_core.session.state import SessionState
from hermes_core.session.submitting import SessionQueue
from hermes_core.session.transcript import SessionTranscript
from hermes_core.testing import make_kernel

# What plugins call on a session: every name stays (docs/reference/core.md#core-api).
PUBLIC = """
add_subscriber add_usage append_rows approved_keys attach_log background branch busy
cancel_queued close comparable_transcript compress cwd emit forget_problem hidden_tools history
info interrupt mark_changed mark_cut_off open_questions pending_title persisted position_of
profile reconcile record remember_approval remove_subscriber replace_rows report_problem rewind
rows save_extra_later set_cwd set_pending_title set_profile set_reasoning_effort set_status
set_system_overlay set_title set_tool_filter steer stop_processes submit subscribe switch_model
track_process undo untrack_process update_record usage withdraw_steer run status once_model
extra file_access background_tasks title_refine_started lineage kernel id
""".split()


def sqlite_kernel(tmp_path: Path) -> Kernel:
    return make_kernel(
        entry_points=["mock", "tools", "sqlite"],
        settings={"storage": {"backend": "sqlite", "path": str(tmp_path / "h.sqlite3")}},
    )


PARTS = {
    "state": SessionState,
    "queue": SessionQueue,
    "controls": SessionControls,
    "transcript": SessionTranscript,
}


async def test_the_public_api_is_whole_and_each_forward_is_its_parts_method(tmp_path: Path) -> None:
    kernel = make_kernel(entry_points=["mock", "tools"])
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        missing = [name for name in PUBLIC if not hasattr(session, name)]
        assert missing == []
        forwards = {name: d for name, d in vars(Session).items() if isinstance(d, forward)}
        assert len(forwards) >= 30
        for name, d in forwards.items():
            part = getattr(session, d.part)
            assert isinstance(part, PARTS[d.part]), name
            bound = getattr(session, name)
            assert bound.__self__ is part and bound.__func__ is getattr(PARTS[d.part], name), name
            assert inspect.signature(bound) == inspect.signature(getattr(part, name)), name
            assert getattr(Session, name).__doc__ == getattr(PARTS[d.part], name).__doc__, name


async def test_a_branch_is_opened_with_the_sources_settings_and_rows(tmp_path: Path) -> None:
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        source = await kernel.open_session(source="embed", owner="t", cwd=tmp_path, title="Topic")
        await (await source.submit("ping", owner="t")).outcome
        await source.set_reasoning_effort("high")
        await source.set_system_overlay("be brief")
        child = await source.branch(owner="t")
        assert child.persisted and child.id != source.id
        assert [(r.role, r.content) for r in child.rows] == [(r.role, r.content) for r in source.rows]
        record = child.record
        assert (record.title, record.title_origin) == ("Topic (branch)", "explicit")
        assert (record.reasoning_effort, record.system_overlay) == ("high", "be brief")
        assert record.parent_session_id == source.id
        stored = await kernel.sessions.stored(child.id)
        assert stored.record.title == "Topic (branch)"
        assert [r.content for r in stored.rows] == [r.content for r in source.rows]


async def test_a_method_in_flight_keeps_its_session_when_the_caller_lets_go(tmp_path: Path) -> None:
    """pi replaces its session while a command on the old one still awaits: the command ends on
    the session it was called on, instead of failing with ``ReferenceError`` halfway through."""
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        await (await session.submit("ping", owner="t")).outcome
        session_id = session.id
        switching = session.switch_model("mock:echo", scope="session")
        naming = asyncio.ensure_future(session.set_title("Kept"))
        await session.close()
        del session
        gc.collect()
        switched = await switching
        assert switched.ref == "mock:echo"
        assert (await naming).title == "Kept"
        stored = await kernel.sessions.stored(session_id)
        assert stored.record.model == "mock:echo" and stored.record.title == "Kept"
