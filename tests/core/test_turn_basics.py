"""The turn loop through the public API with the mock provider
(docs/reference/core.md#the-turn-loop, #turn-outcomes, #events, #usage, #images)."""

from __future__ import annotations

from pathlib import Path

from hermes_core import ImagePart, Kernel, TextDelta, TextPart, TurnCompleted, TurnStarted, UsageUpdated
from tests.core.conftest import collect, names


async def test_turn_streams_and_completes_in_order(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    turn = await session.submit("hello there world", owner="me")
    events = await collect(turn)
    assert isinstance(events[0], TurnStarted)
    assert isinstance(events[-1], TurnCompleted)
    assert names(events).count("TurnCompleted") == 1
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    # The first delta goes out alone; the rest, there at once, as one (core.md#delta-coalescing).
    assert deltas == ["You", " said: hello there world"]
    done = events[-1]
    assert done.text == "".join(deltas) == "You said: hello there world"
    assert done.outcome.status == "complete" and done.outcome.reason == "stop"
    assert done.user_row_id is not None and done.assistant_row_id is not None
    assert all(e.turn_id == events[0].turn_id for e in events)
    outcome = await turn.outcome
    assert outcome == done.outcome
    assert not session.busy and session.info().status == "idle"


async def test_deltas_that_wait_for_each_other_stay_apart_and_a_burst_is_merged(
    kernel: Kernel, workspace: Path
) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    paced = await collect(await session.submit("go [[tokens 6]] [[delay 2]]", owner="me"))
    assert [e.text for e in paced if isinstance(e, TextDelta)] == ["t0", " t1", " t2", " t3", " t4", " t5"]
    burst = await collect(await session.submit("go [[tokens 200]]", owner="me"))
    deltas = [e for e in burst if isinstance(e, TextDelta)]
    done = burst[-1]
    assert isinstance(done, TurnCompleted) and "".join(e.text for e in deltas) == done.text
    # The first alone, then at most 64 deltas per event (the turn yields to the loop between).
    assert deltas[0].text == "t0" and len(deltas) == 1 + -(-199 // 64)
    assert len({e.segment_id for e in deltas}) == 1


async def test_tokens_directive_and_usage(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    events = await collect(await session.submit("count [[tokens 5]]", owner="me"))
    done = events[-1]
    assert done.text == "t0 t1 t2 t3 t4"
    usage = [e for e in events if isinstance(e, UsageUpdated)]
    assert len(usage) == 1
    assert done.turn_usage.output == 5 and done.turn_usage.input == 3  # words as sent, directive included
    assert done.turn_usage.total == 8 and not done.turn_usage.estimated
    assert done.turn_usage.context_max == 32768
    # cumulative usage grows across turns
    events2 = await collect(await session.submit("again [[tokens 3]]", owner="me"))
    assert events2[-1].usage.output == 8
    assert session.info().usage.calls == 2


async def test_finish_reasons_map_to_outcomes(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    length = await (await session.submit("cut [[finish length]]", owner="me")).outcome
    assert (length.status, length.reason, length.partial) == ("complete", "length", True)
    refusal = await (await session.submit("no [[finish refusal]]", owner="me")).outcome
    assert (refusal.status, refusal.reason) == ("complete", "refusal")


async def test_provider_error_fails_the_turn_and_session_stays_usable(
    kernel: Kernel, workspace: Path
) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    events = await collect(await session.submit("x [[error upstream exploded]]", owner="me"))
    outcome = events[-1].outcome
    assert outcome.status == "error" and outcome.reason == "provider_error"
    assert outcome.error_kind == "upstream" and outcome.message == "upstream exploded"
    assert outcome.layer == "provider"
    ok = await (await session.submit("fine", owner="me")).outcome
    assert ok.reason == "stop"


async def test_images_are_dropped_for_models_without_vision(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    turn = await session.submit([TextPart("look"), ImagePart(data=b"\x89PNG", mime="image/png")], owner="me")
    events = await collect(turn)
    assert events[-1].warnings == ("images_dropped",)
    assert events[-1].text == "You said: look"
    rows = await session.history()
    assert any(isinstance(p, ImagePart) for p in rows[0].parts)


async def test_history_model_sees_every_user_turn(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="embed", owner="me", cwd=workspace, model="mock:history")
    await (await session.submit("one", owner="me")).outcome
    events = await collect(await session.submit("two", owner="me"))
    assert events[-1].text == "Turns: one | two"
    assert events[0].model == "mock:history"


async def test_empty_prompt_is_refused(kernel: Kernel, workspace: Path) -> None:
    import pytest

    from hermes_core import InvalidValue

    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    with pytest.raises(InvalidValue):
        await session.submit("   ", owner="me")
    assert not session.busy


async def test_unknown_per_turn_model_is_refused_before_queueing(kernel: Kernel, workspace: Path) -> None:
    import pytest

    from hermes_core import ModelNotFound

    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    with pytest.raises(ModelNotFound):
        await session.submit("hi", owner="me", model="mock:nope")
    assert not session.busy
    events = await collect(await session.submit("hi", owner="me", model="mock:alt"))
    assert events[-1].text == "alt: You said: hi"
    assert events[0].model_source == "turn"
    # a per-turn override never persists
    assert session.info().model == "mock:echo"


async def test_derived_title_is_emitted_before_the_first_turn_completes(
    kernel: Kernel, workspace: Path
) -> None:
    from hermes_core import TitleChanged

    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    bus = session.subscribe()
    await (await session.submit("please refactor the parser module to be faster now", owner="me")).outcome
    seen = []
    while True:
        ev = await bus.__anext__()
        seen.append(ev)
        if isinstance(ev, TurnCompleted):
            break
    titles = [e for e in seen if isinstance(e, TitleChanged)]
    assert titles and titles[0].origin == "derived"
    assert titles[0].title == "please refactor the parser module to"
    assert session.info().title == "please refactor the parser module to"
    bus.close()


async def test_untracked_turn_resolves_and_events_reach_the_bus(kernel: Kernel, workspace: Path) -> None:
    import pytest

    session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
    bus = session.subscribe()
    turn = await session.submit("quiet", owner="me", track_events=False)
    assert (await turn.outcome).reason == "stop"
    with pytest.raises(RuntimeError):
        await turn.events().__anext__()
    seen = []
    async for ev in bus:
        seen.append(ev)
        if isinstance(ev, TurnCompleted):
            break
    assert seen[-1].text == "You said: quiet"
    bus.close()


async def test_row_timestamps_are_the_same_in_memory_and_in_storage(tmp_path: Path, workspace: Path) -> None:
    from hermes_core.testing import make_kernel

    kernel = make_kernel(
        entry_points=["mock", "sqlite"],
        settings={"storage": {"backend": "sqlite", "path": str(tmp_path / "t.sqlite3")}},
    )
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=workspace)
        await (await session.submit("stamp", owner="me")).outcome
        live = [(r.id, r.created_at) for r in session.rows]
        stored = [(r.id, r.created_at) for r in await kernel.storage.load_rows(session.id)]
        assert live == stored
