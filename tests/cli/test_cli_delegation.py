"""``hermes sessions`` after a delegation: children stay out of the list, ``show`` names the parent."""

from __future__ import annotations

import json

from tests.cli.cli_helpers import Hermes


def test_children_are_not_listed_and_show_names_their_parent(hermes: Hermes) -> None:
    tasks = [{"goal": "one [[tokens 2]]"}, {"goal": "two [[tokens 3]]"}]
    ran = hermes("run", "--session", "parent-s", f"[[tool delegate_task {json.dumps({'tasks': tasks})}]]")
    assert ran.returncode == 0, ran.stderr
    children = [r["subagent_id"] for r in json.loads(ran.stdout.removeprefix("Done: "))["results"]]
    assert len(children) == 2
    listed = hermes("sessions", "list")
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines()[1:] if line.strip()]
    assert len(rows) == 1 and rows[0].startswith("parent-s"), listed.stdout
    assert not any(child in listed.stdout for child in children)
    shown = hermes("sessions", "show", children[1])
    assert shown.returncode == 0, shown.stderr
    assert "parent:  parent-s" in shown.stdout and "source:  tool" in shown.stdout
    assert "t0 t1 t2" in shown.stdout
    assert "parent:" not in hermes("sessions", "show", "parent-s").stdout
