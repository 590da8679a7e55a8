"""Delegation over a real ``hermes tui`` process (docs/reference/tui-gateway.md#subagents): subagent
events, delegation.status/pause, subagent.list/interrupt/steer/tail and stored spawn trees."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.timing import eventually_sync
from tests.tui.client import TuiProcess, write_config


def delegate(**args: Any) -> str:
    return f"[[tool delegate_task {json.dumps(args)}]]"


def results(done: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-task results from the mock's final answer ``Done: <tool result>``."""
    return json.loads(done["text"].removeprefix("Done: "))["results"]  # type: ignore[no-any-return]


def subagent_events(tui: TuiProcess, sid: str, kind: str) -> list[dict[str, Any]]:
    return [e["payload"] for e in tui.events(sid, f"subagent.{kind}")]


def test_a_batch_of_three_runs_in_parallel_and_its_tree_is_stored(tui: TuiProcess) -> None:
    sid = tui.create()
    tasks = [{"goal": f"[[tokens 10]] [[delay 80]] part {i}"} for i in range(3)]
    started = time.monotonic()
    done = tui.turn(sid, delegate(tasks=tasks), timeout=30)
    wall = time.monotonic() - started
    res = results(done)
    assert [r["status"] for r in res] == ["completed"] * 3
    assert [r["summary"] for r in res] == ["t0 t1 t2 t3 t4 t5 t6 t7 t8 t9"] * 3
    # Parallel: the whole turn takes about one child's time, well under the sum.
    assert wall < 0.6 * sum(r["duration_s"] for r in res) + 0.3, (wall, res)
    starts = subagent_events(tui, sid, "start")
    assert sorted(s["task_index"] for s in starts) == [0, 1, 2]
    first = starts[0]
    assert first["parent_id"] == sid and first["depth"] == 1 and first["task_count"] == 3
    assert first["model"] == "mock:echo" and first["goal"] == tasks[first["task_index"]]["goal"]
    completes = subagent_events(tui, sid, "complete")
    assert {c["status"] for c in completes} == {"completed"} and len(completes) == 3
    assert all(c["usage"]["output"] == 10 for c in completes)
    assert subagent_events(tui, sid, "progress")
    # The gateway stored the tree itself.
    listed = tui.call("subagent.list", session_id=sid)["subagents"]
    assert {s["subagent_id"] for s in listed} == {r["subagent_id"] for r in res}

    def auto_tree() -> list[dict[str, Any]]:
        return [e for e in tui.call("spawn_tree.list", session_id=sid)["entries"] if e["label"] == "auto"]

    [entry] = eventually_sync(auto_tree, what="the stored spawn tree")
    assert entry["count"] == 3
    tree = tui.call("spawn_tree.load", path=entry["path"])
    assert tree["session_id"] == sid
    assert sorted(s["task_index"] for s in tree["subagents"]) == [0, 1, 2]
    assert {s["status"] for s in tree["subagents"]} == {"completed"}
    tail = tui.call("subagent.tail", subagent_id=res[0]["subagent_id"], session_id=sid)
    assert tail["status"] == "completed" and "t9" in tail["text"]
    assert tui.error("subagent.tail", subagent_id="nope").code == 4004


def test_limits_and_pause_are_tool_errors(spawn: Callable[..., TuiProcess], home: Path) -> None:
    write_config(home, 'model = "mock:echo"\n[delegation]\nmax_concurrent_children = 2\n')
    tui = spawn()
    sid = tui.create()
    status = tui.call("delegation.status", session_id=sid)
    assert status["max_concurrent_children"] == 2 and status["max_spawn_depth"] == 1
    done = tui.turn(sid, delegate(tasks=[{"goal": "a"}, {"goal": "b"}, {"goal": "c"}]))
    assert "max_concurrent_children 2" in done["text"]
    # Depth 1: a child has no delegate_task at all.
    done = tui.turn(sid, delegate(goal=delegate(goal="deeper"), role="orchestrator"))
    assert results(done)[0]["summary"] == "Done: unknown tool: delegate_task"
    assert tui.call("delegation.pause", session_id=sid, paused=True) == {"session_id": sid, "paused": True}
    assert tui.call("delegation.status", session_id=sid)["paused"] is True
    assert "paused" in tui.turn(sid, delegate(goal="x"))["text"]
    tui.call("delegation.pause", session_id=sid, paused=False)
    assert results(tui.turn(sid, delegate(goal="y [[tokens 1]]")))[0]["summary"] == "t0"
    assert tui.error("delegation.pause", session_id=sid, paused="yes").code == -32602
    assert tui.error("delegation.pause", session_id="missing").code == 4001


def test_pause_without_a_session_holds_every_session_back(tui: TuiProcess) -> None:
    """``delegation.pause {paused}`` with no ``session_id`` (what the Ink TUI's ``/agents pause``
    sends) pauses every session of the gateway, those opened later too, until resumed."""
    first = tui.create()
    assert tui.call("delegation.pause", paused=True) == {"session_id": None, "paused": True}
    assert tui.call("delegation.status")["paused"] is True
    later = tui.create()
    for sid in (first, later):
        assert tui.call("delegation.status", session_id=sid)["paused"] is True
        assert "paused" in tui.turn(sid, delegate(goal="x"))["text"]
    assert tui.call("delegation.pause", paused=False) == {"session_id": None, "paused": False}
    assert tui.call("delegation.status")["paused"] is False
    assert results(tui.turn(later, delegate(goal="y [[tokens 1]]")))[0]["summary"] == "t0"
    assert results(tui.turn(first, delegate(goal="z [[tokens 1]]")))[0]["summary"] == "t0"
    assert tui.error("delegation.pause", session_id=5, paused=True).code == -32602


def test_interrupt_cascades_and_one_child_can_be_stopped(tui: TuiProcess) -> None:
    sid = tui.create()
    slow = "[[tokens 5000]] [[delay 20]] slow"
    tui.call("prompt.submit", session_id=sid, text=delegate(tasks=[{"goal": slow}, {"goal": slow}]))
    tui.wait_event(sid, "subagent.progress", count=2, timeout=20)
    eventually_sync(lambda: len(tui.call("delegation.status", session_id=sid)["active"]) == 2)
    ids = {e["subagent_id"] for e in subagent_events(tui, sid, "start")}
    first = sorted(ids)[0]
    assert tui.call("subagent.interrupt", subagent_id=first, session_id=sid) == {
        "found": True,
        "subagent_id": first,
    }
    tui.wait_event(sid, "subagent.complete", where=lambda e: e["payload"]["subagent_id"] == first)
    assert tui.call("delegation.status", session_id=sid)["active"][0]["subagent_id"] != first
    tui.call("session.interrupt", session_id=sid)
    assert tui.wait_complete(sid)["status"] == "interrupted"
    tui.wait_event(sid, "subagent.complete", count=2)
    assert {c["status"] for c in subagent_events(tui, sid, "complete")} == {"interrupted"}
    assert {c["subagent_id"] for c in subagent_events(tui, sid, "complete")} == ids
    assert tui.call("delegation.status", session_id=sid)["active"] == []
    assert tui.call("subagent.interrupt", subagent_id=first) == {"found": False, "subagent_id": first}


def test_steer_reaches_a_running_child(tui: TuiProcess) -> None:
    sid = tui.create()
    goal = '[[tool terminal {"command": "sleep 1; echo slept"}]]'
    tui.call("prompt.submit", session_id=sid, text=delegate(goal=goal))
    tool = tui.wait_event(sid, "subagent.tool", where=lambda e: e["payload"]["phase"] == "start")["payload"]
    child = tool["subagent_id"]
    steered = tui.call("subagent.steer", session_id=sid, subagent_id=child, text="check the logs")
    assert steered == {"status": "queued", "subagent_id": child, "text": "check the logs"}
    done = tui.wait_complete(sid, timeout=20)
    assert results(done)[0]["summary"] == "Done: slept / Steer: check the logs"
    late = tui.call("subagent.steer", session_id=sid, subagent_id=child, text="too late")
    assert late["status"] == "rejected" and late["reason"] == "not_running"


def test_a_childs_approval_reaches_the_host(spawn: Callable[..., TuiProcess], home: Path) -> None:
    write_config(home, 'model = "mock:echo"\n[tui]\napproval_profile = "default"\n')
    tui = spawn()
    sid = tui.create()
    write = '[[tool write_file {"path": "from-child.txt", "content": "hi"}]]'
    tui.call("prompt.submit", session_id=sid, text=delegate(goal=write))
    ask = tui.wait_event(sid, "approval.request")["payload"]
    child = subagent_events(tui, sid, "start")[0]["subagent_id"]
    assert ask["task_id"] == child and ask["tool_name"] == "write_file"
    assert tui.call("approval.respond", session_id=sid, request_id=ask["request_id"], choice="once") == {
        "resolved": 1
    }
    done = tui.wait_complete(sid, timeout=20)
    assert results(done)[0]["status"] == "completed"
    assert (home / "from-child.txt").read_text() == "hi"


def test_background_delegation_finishes_after_the_turn(tui: TuiProcess) -> None:
    sid = tui.create()
    done = tui.turn(sid, delegate(goal="[[tokens 6]] [[delay 60]] later", background=True))
    body = json.loads(done["text"].removeprefix("Done: "))
    assert body["status"] == "started" and body["delegation_id"].startswith("dg_")
    assert tui.events(sid, "background.complete") == []
    finished = tui.wait_event(sid, "background.complete", timeout=20)["payload"]
    assert finished == {"task_id": body["delegation_id"], "text": "t0 t1 t2 t3 t4 t5", "status": "complete"}
    last = subagent_events(tui, sid, "complete")[-1]
    assert last["delegation_id"] == body["delegation_id"] and last["status"] == "completed"

    # The tree stored when the turn ended showed the child running; its end stores it settled.
    def settled() -> list[dict[str, Any]]:
        trees = [
            tui.call("spawn_tree.load", path=e["path"])
            for e in tui.call("spawn_tree.list", session_id=sid)["entries"]
        ]
        return [s for t in trees for s in t["subagents"] if s["status"] == "completed"]

    [child] = eventually_sync(settled, what="the settled tree")
    assert child["subagent_id"] == body["subagent_id"] and child["ended_at"] is not None


def test_spawn_trees_survive_a_restart(spawn: Callable[..., TuiProcess], home: Path) -> None:
    first = spawn()
    sid = first.create()
    first.turn(sid, delegate(tasks=[{"goal": "one [[tokens 2]]"}, {"goal": "two [[tokens 2]]"}]))
    eventually_sync(lambda: first.call("spawn_tree.list", session_id=sid)["entries"], what="a stored tree")
    assert first.close() == 0
    second = spawn()
    [entry] = second.call("spawn_tree.list", session_id=sid)["entries"]
    assert entry["label"] == "auto" and entry["count"] == 2
    tree = second.call("spawn_tree.load", path=entry["path"])
    assert sorted(s["goal"] for s in tree["subagents"]) == ["one [[tokens 2]]", "two [[tokens 2]]"]


def test_spawn_tree_load_of_an_unknown_or_garbled_path_is_a_clear_error(tui: TuiProcess) -> None:
    sid = tui.create()
    tui.turn(sid, delegate(goal="one [[tokens 2]]"))
    [entry] = eventually_sync(lambda: tui.call("spawn_tree.list", session_id=sid)["entries"], what="a tree")
    folder = Path(entry["path"]).parent
    missing = tui.error("spawn_tree.load", path=str(folder / "20990101T000000-ffff.json"))
    assert missing.code == 4016 and "no spawn tree" in missing.message
    assert missing.data == {"path": str(folder / "20990101T000000-ffff.json")}
    assert tui.error("spawn_tree.load", path=str(folder)).code == 4016  # a folder, not a tree
    assert tui.error("spawn_tree.load", path=str(folder / ("x" * 300 + ".json"))).code == 4016
    garbled = folder / "garbled.json"
    garbled.write_text("{not json")
    bad = tui.error("spawn_tree.load", path=str(garbled))
    assert bad.code == 4016 and bad.message == "this file is not a spawn tree"
    garbled.write_text('["a list"]')
    assert tui.error("spawn_tree.load", path=str(garbled)).code == 4016
    nul = tui.error("spawn_tree.load", path=str(folder) + "/a\u0000b.json")
    assert nul.code == 4002 and nul.message == "path is not a valid file path"
    assert tui.error("spawn_tree.load", path="/etc/passwd").code == 4030
    # The gateway still answers, and the real tree still loads.
    assert tui.call("spawn_tree.load", path=entry["path"])["session_id"] == sid


def test_closing_a_parent_settles_its_stored_tree(tui: TuiProcess) -> None:
    sid = tui.create()
    done = tui.turn(sid, delegate(goal="[[tokens 5000]] [[delay 50]] forever", background=True))
    child = json.loads(done["text"].removeprefix("Done: "))["subagent_id"]
    [entry] = eventually_sync(lambda: tui.call("spawn_tree.list", session_id=sid)["entries"], what="a tree")
    assert [s["status"] for s in tui.call("spawn_tree.load", path=entry["path"])["subagents"]] == ["running"]
    assert tui.call("session.close", session_id=sid) == {"closed": True}
    newest = tui.call("spawn_tree.list", session_id=sid)["entries"][0]
    assert newest["path"] != entry["path"]
    [settled] = tui.call("spawn_tree.load", path=newest["path"])["subagents"]
    assert settled["subagent_id"] == child and settled["status"] == "interrupted"
    assert settled["ended_at"] is not None
    # Neither the parent's close nor its child leaves the child in the session list.
    listed = {s["id"] for s in tui.call("session.list")["sessions"]}
    assert sid in listed and child not in listed


def test_children_stay_out_of_session_lists_and_cannot_be_resumed_while_running(tui: TuiProcess) -> None:
    sid = tui.create()
    # 12 s: still running, even on a loaded machine, while the next calls check it.
    done = tui.turn(sid, delegate(goal="[[tokens 600]] [[delay 20]] slow", background=True))
    child = json.loads(done["text"].removeprefix("Done: "))["subagent_id"]
    assert tui.call("subagent.list", session_id=sid, active_only=True)["subagents"][0]["subagent_id"] == child
    listed = {s["id"] for s in tui.call("session.list")["sessions"]}
    assert sid in listed and child not in listed
    refused = tui.error("session.resume", session_id=child)
    assert refused.code == 4009 and refused.data == {"reason": "subagent"}
    assert f"running subagent of session {sid}" in refused.message
    tui.wait_event(sid, "background.complete", timeout=90)
    # Once it has ended, its transcript opens like any stored session (and stays unlisted).
    opened = eventually_sync(lambda: _resume_or_none(tui, child), what="the ended child to open")
    assert opened["resumed"] == child
    assert "t599" in json.dumps(opened["messages"])
    assert child not in {s["id"] for s in tui.call("session.list")["sessions"]}


def _resume_or_none(tui: TuiProcess, sid: str) -> dict[str, Any] | None:
    from tests.tui.client import RpcFailure

    try:
        return tui.call("session.resume", session_id=sid)  # type: ignore[no-any-return]
    except RpcFailure as exc:
        if exc.code == 4009:
            return None  # the child's session is still closing
        raise
