"""A ``delegate_task`` batch in upstream's Ink TUI on our gateway: the live children in its
``/agents`` panel and the status bar, then the finished tree
(docs/protocols/tui-gateway.md#using-the-ink-tui)."""

from __future__ import annotations

from tests.tui.ink.bundle import skip_unless_wanted

pytestmark = skip_unless_wanted

BATCH = (
    'split [[tool delegate_task {"tasks": ['
    '{"goal": "alpha job [[tokens 60]] [[delay 250]]"}, '
    '{"goal": "beta job [[tokens 60]] [[delay 250]]"}]}]]'
)


def test_delegate_task_batch_shows_its_children_live(ink) -> None:
    tui = ink()
    tui.ready()
    tui.submit(BATCH)
    tui.wait_event("subagent.start", count=2)
    tui.wait_for("⚡2/3")  # the status bar: two children running of three allowed
    tui.submit("/agents")
    screen = tui.wait_for("Spawn tree")
    live = [line for line in screen.splitlines() if "● alpha job" in line or "● beta job" in line]
    assert len(live) == 2, screen  # both children, running
    assert tui.recording.events("subagent.complete") == []
    screen = tui.wait_for(lambda s: "✓ alpha job" in s and "✓ beta job" in s, timeout=60)
    completes = tui.recording.events("subagent.complete")
    assert sorted(e["payload"]["goal"].split()[0] for e in completes) == ["alpha", "beta"]
    assert all(e["payload"]["status"] == "completed" for e in completes)
    tui.keys("q")
    tui.wait_for(lambda s: "Done:" in s and "─ ready" in s, timeout=60)
    assert tui.recording.requests("spawn_tree.save")  # the TUI stores the finished tree
    assert tui.recording.errors() == []


def test_agents_pause_holds_delegation_back_until_resumed(ink) -> None:
    """``/agents pause`` sends ``delegation.pause`` without a session; it holds back the TUI's
    session (a ``delegate_task`` gets a tool error) until ``/agents resume``."""
    tui = ink()
    tui.ready()
    tui.submit("/agents pause")
    tui.wait_for("delegation · paused")
    assert tui.recording.result_of("delegation.pause")["result"]["paused"] is True
    tui.submit('[[tool delegate_task {"goal": "held job"}]]')
    tui.wait_event("message.complete")
    assert "paused" in tui.recording.events("message.complete")[-1]["payload"]["text"]
    assert tui.recording.events("subagent.start") == []
    tui.submit("/agents resume")
    tui.wait_for("delegation · resumed")
    tui.submit('[[tool delegate_task {"goal": "free job [[tokens 3]]"}]]')
    tui.wait_event("subagent.complete")
    tui.wait_event("message.complete", count=2)
    assert tui.recording.errors() == []
