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
