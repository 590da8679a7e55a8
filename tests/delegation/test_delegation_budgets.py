"""A child agent charges its root run's buckets (docs/reference/budgets.md#in-a-turn): the calls
of a ``delegate_task`` child count in the parent session's bucket, and the child's own session
has none."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes_core import Kernel, ToolCompleted


async def test_a_childs_calls_count_in_the_parents_session_bucket(
    make: Callable[..., Kernel], workspace: Path
) -> None:
    kernel = make(
        budgets={
            "session": {"spend_usd": 1000.0},
            "max_output_tokens": 10,
            "prices": {"*": {"input": 0.0, "output": 1_000_000.0}},  # $1 per output token
        }
    )
    async with kernel.running():
        parent = await kernel.open_session(source="tui", owner="t", cwd=workspace)
        prompt = '[[tool delegate_task {"goal": "count [[tokens 3]]"}]]'
        turn = await parent.submit(prompt, owner="t")
        events = [ev async for ev in turn.events()]
        outcome = await turn.outcome
        assert outcome.status == "complete", outcome
        [done] = [e for e in events if isinstance(e, ToolCompleted) and e.name == "delegate_task"]
        [result] = json.loads(done.result_text)["results"]
        child_out = result["tokens"]["output"]
        assert child_out == 3
        ledger = kernel.budgets.ledger()
        mine = await ledger.read(f"session:{parent.id}")
        child = await ledger.read(f"session:{result['subagent_id']}")
        # The parent's usage includes its child's (hermes_delegation adds it when the child ends).
        total_out = parent.usage.output
    assert child == {}  # the child never charged a bucket of its own
    assert total_out > child_out
    assert mine["spent"] == pytest.approx(total_out)  # the parent's calls and the child's
    assert mine["res"] == {} and mine["runs"] == {}
