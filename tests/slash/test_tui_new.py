"""``/new`` over a real ``hermes tui``: the gateway opens the fresh session and hands its id over.

The command answers an ``exec`` directive that also carries the new session's snapshot (its
``session_id`` is what the host switches to), binds the new session to the caller and follows the
response with its ``session.info``; the previous session stays live, unchanged and resumable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tui.client import TuiProcess

from .transports import make_home, start_tui


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Return one module-wide ``(home, workspace)``."""
    return make_home(tmp_path_factory.mktemp("tui-new"))


@pytest.fixture(scope="module")
def tui(places: tuple[Path, Path]) -> Iterator[TuiProcess]:
    """One gateway for the module; each test uses its own sessions."""
    proc = start_tui(places[0])
    yield proc
    proc.close()


def _frame_index(tui: TuiProcess, predicate: Callable[[dict[str, Any]], bool]) -> int:
    """Return the arrival index of the first frame matching ``predicate``."""
    return next(i for i, f in enumerate(list(tui.col.frames)) if predicate(f))


def test_new_opens_a_bound_session_and_keeps_the_old_one(tui: TuiProcess, places: tuple[Path, Path]) -> None:
    workspace = places[1]
    old = tui.create(cwd=str(workspace))
    tui.turn(old, "before the reset")
    assert tui.call("command.dispatch", session_id=old, command="/model mock:alt")["type"] == "exec"
    tui.call("config.set", session_id=old, key="busy", value="steer")
    request_id = tui.start("command.dispatch", session_id=old, command="/new")
    reply = tui.response(request_id)["result"]
    new = reply["session_id"]
    assert reply["type"] == "exec"
    assert reply["output"] == f"Started new session {new}; {old} is kept and can be resumed."
    assert new != old and reply["previous_session_id"] == old
    assert reply["stored_session_id"] == reply["session_key"] == new
    assert (reply["messages"], reply["message_count"], reply["running"]) == ([], 0, False)
    # What the user chose for the old session carries over; the conversation does not.
    assert reply["info"]["model"] == "mock:alt"
    assert reply["info"]["cwd"] == str(workspace)
    assert reply["info"]["busy_policy"] == "steer"
    # The new session's session.info follows the response on the caller's connection.
    info = tui.wait_event(new, "session.info")
    assert info["payload"]["session_id"] == new
    response_at = _frame_index(tui, lambda f: f.get("id") == request_id)
    first_event_at = _frame_index(
        tui, lambda f: f.get("method") == "event" and f["params"].get("session_id") == new
    )
    assert response_at < first_event_at
    # The new session runs turns on the carried model and starts with an empty history.
    assert tui.turn(new, "after the reset")["text"] == "alt: You said: after the reset"
    texts = [m["text"] for m in tui.call("session.history", session_id=new)["messages"]]
    assert texts == ["after the reset", "alt: You said: after the reset"]
    # The old session is still live, untouched, and listed beside the new one.
    old_texts = [m["text"] for m in tui.call("session.history", session_id=old)["messages"]]
    assert old_texts == ["before the reset", "You said: before the reset"]
    live = {s["id"] for s in tui.call("session.active_list")["sessions"]}
    assert {old, new} <= live
    assert tui.turn(old, "still here")["text"] == "alt: You said: still here"


def test_reset_through_slash_exec_starts_on_the_configured_model(tui: TuiProcess) -> None:
    old = tui.create()
    tui.turn(old, "hello")
    result = tui.call("slash.exec", session_id=old, command="/reset")
    new = result["session_id"]
    assert "type" not in result and result["output"].startswith(f"Started new session {new};")
    assert result["previous_session_id"] == old
    # No /model on the old session: the new one follows the configured default, not a pinned copy.
    assert result["info"]["model"] == "mock:echo"
    tui.wait_event(new, "session.info")
    # Like session.create, the new session is lazy: stored only from its first turn.
    assert new not in {s["id"] for s in tui.call("session.list")["sessions"]}
    assert tui.turn(new, "fresh")["text"] == "You said: fresh"
    assert new in {s["id"] for s in tui.call("session.list")["sessions"]}


def test_new_needs_a_live_session(tui: TuiProcess) -> None:
    assert tui.error("command.dispatch", command="/new").code == 4001
    assert tui.error("command.dispatch", session_id="20990101_000000_abcdef", command="/new").code == 4001


def test_branch_through_command_dispatch_is_served(tui: TuiProcess, places: tuple[Path, Path]) -> None:
    """``/branch`` via command.dispatch binds the copy like session.branch: usable at once."""
    source = tui.create(cwd=str(places[1]))
    tui.turn(source, "the shared start")
    reply = tui.call("command.dispatch", session_id=source, command="/branch side quest")
    child = reply["session_id"]
    assert reply["type"] == "exec" and child in reply["output"]
    assert child != source and reply["parent"] == source and reply["title"] == "side quest"
    assert [m["text"] for m in reply["messages"] if m["role"] == "user"] == ["the shared start"]
    # The gateway serves the branch: a turn runs there and the source is unchanged.
    assert tui.turn(child, "only in the branch")["text"] == "You said: only in the branch"
    users = [
        m["text"] for m in tui.call("session.history", session_id=source)["messages"] if m["role"] == "user"
    ]
    assert users == ["the shared start"]
    listed = {s["id"] for s in tui.call("session.list")["sessions"]}
    assert {source, child} <= listed
