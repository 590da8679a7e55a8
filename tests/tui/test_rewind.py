"""Rewind on prompt.submit over real stdio (docs/reference/tui-gateway.md#rewind-edit-and-regenerate; checks
18-22)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.cli.cli_helpers import write_distribution
from tests.tui.client import TuiProcess, write_config

FLAKY_STORE = '''
"""A memory storage backend whose rewrite fails while a marker file exists (tests only)."""
from pathlib import Path

from hermes_core import hookimpl
from hermes_core.memory_storage import MemoryStorage
from hermes_core.records import StorageSpec


class FlakyStorage(MemoryStorage):
    def __init__(self, path):
        super().__init__()
        self.marker = Path(path).with_name("fail-rewrites")

    async def rewrite(self, session_id, **kw):
        if self.marker.exists():
            raise OSError("disk on fire")
        return await super().rewrite(session_id, **kw)


@hookimpl
def hermes_storage_backends():
    return StorageSpec(name="flaky", factory=lambda path: FlakyStorage(path))
'''


def _three_turns(tui: TuiProcess) -> tuple[str, list[int]]:
    sid = tui.create()
    for text in ("one", "two", "three"):
        tui.turn(sid, text)
    users = [
        m["row_id"] for m in tui.call("session.history", session_id=sid)["messages"] if m["role"] == "user"
    ]
    assert len(users) == 3 and all(isinstance(u, int) for u in users)
    return sid, users


def _texts(tui: TuiProcess, sid: str) -> list[str]:
    return [m["text"] for m in tui.call("session.history", session_id=sid)["messages"]]


def test_rewind_consent_is_required(tui: TuiProcess) -> None:
    """Check 18: no confirm → 4029; confirm alone → 4004; ordinal true or "3.5" → 4004; nothing changes."""
    sid, users = _three_turns(tui)
    before = _texts(tui, sid)

    def refused(**params: Any) -> int:
        code: int = tui.error("prompt.submit", session_id=sid, text="edit", **params).code
        return code

    assert refused(truncate_before_row_id=users[1]) == 4029
    assert refused(confirm_truncate=True) == 4004
    assert refused(truncate_before_user_ordinal=True, confirm_truncate=True) == 4004
    assert refused(truncate_before_user_ordinal="3.5", confirm_truncate=True) == 4004
    assert refused(truncate_before_row_id=1.5, confirm_truncate=True) == 4004
    assert refused(truncate_before_row_id=users[1], confirm_truncate="yes") == 4029
    assert _texts(tui, sid) == before
    assert len(tui.events(sid, "message.start")) == 3


def test_rewind_by_row_id_keeps_survivor_ids(tui: TuiProcess) -> None:
    """Check 19: survivors keep their ids; history shows turn 1 then the new turn; archived rows visible."""
    sid, users = _three_turns(tui)
    result = tui.call(
        "prompt.submit",
        session_id=sid,
        text="two, edited",
        truncate_before_row_id=users[1],
        confirm_truncate=True,
        rebind_survivor_row_ids=users,
    )
    assert result["status"] == "streaming"
    assert result["survivor_user_row_ids"] == [users[0]]
    assert result["survivor_row_id_map"] == {
        str(users[0]): users[0],
        str(users[1]): None,
        str(users[2]): None,
    }
    tui.wait_complete(sid, 4)
    tui.wait_idle(sid)
    start = tui.events(sid, "message.start")[-1]["payload"]
    history = tui.call("session.history", session_id=sid)["messages"]
    assert [m["text"] for m in history] == ["one", "You said: one", "two, edited", "You said: two, edited"]
    assert history[0]["row_id"] == users[0]
    assert history[2]["row_id"] == start["user_row_id"]
    archived = tui.call("session.history", session_id=sid, include_archived=True)["messages"]
    dropped = [m for m in archived if m.get("active") is False]
    assert {m["row_id"] for m in dropped if m["role"] == "user"} == {users[1], users[2]}
    assert all(m["archived_reason"] == "rewind" for m in dropped)


def test_rewind_refusals(tui: TuiProcess) -> None:
    """Check 20: archived id → 4018 (user_turn_count); mismatch → 4030; ordinal-only → 4004; 0 → 4028."""
    sid, users = _three_turns(tui)
    tui.call(
        "prompt.submit",
        session_id=sid,
        text="redo three",
        truncate_before_row_id=users[2],
        confirm_truncate=True,
    )
    tui.wait_complete(sid, 4)
    tui.wait_idle(sid)
    stale = tui.error(
        "prompt.submit", session_id=sid, text="x", truncate_before_row_id=users[2], confirm_truncate=True
    )
    assert stale.code == 4018
    assert stale.data["user_turn_count"] == 3 and stale.data["row_id"] == users[2]
    assert stale.data["prefix_user_count"] == 0
    mismatch = tui.error(
        "prompt.submit",
        session_id=sid,
        text="x",
        truncate_before_row_id=users[1],
        truncate_before_user_ordinal=0,
        confirm_truncate=True,
    )
    assert mismatch.code == 4030 and mismatch.data == {"ordinal": 0, "resolved_ordinal": 1}
    ordinal_only = tui.error(
        "prompt.submit", session_id=sid, text="x", truncate_before_user_ordinal=1, confirm_truncate=True
    )
    assert ordinal_only.code == 4004
    assert "ordinal-only" in ordinal_only.message
    empty = tui.error(
        "prompt.submit", session_id=sid, text="x", truncate_before_row_id=users[0], confirm_truncate=True
    )
    assert empty.code == 4028
    foreign = tui.error(
        "prompt.submit", session_id=sid, text="x", truncate_before_message_id="abc", confirm_truncate=True
    )
    assert foreign.code == 4018
    assert len(_texts(tui, sid)) == 6
    ok = tui.call(
        "prompt.submit",
        session_id=sid,
        text="from scratch",
        truncate_before_message_id=str(users[0]),
        confirm_truncate=True,
        confirm_empty_truncate=True,
    )
    assert ok["survivor_user_row_ids"] == []
    tui.wait_complete(sid, 5)
    tui.wait_idle(sid)
    assert _texts(tui, sid) == ["from scratch", "You said: from scratch"]


def test_rewind_while_busy_is_refused(tui: TuiProcess) -> None:
    """Check 21: a rewind during a turn → 4009; the turn completes unchanged; nothing is queued or cut."""
    sid, users = _three_turns(tui)
    tui.call("prompt.submit", session_id=sid, text="four [[tokens 300]] [[delay 3]]")
    tui.wait_event(sid, "message.delta", where=lambda e: e["seq"] > 0, count=1)
    busy = tui.error(
        "prompt.submit", session_id=sid, text="x", truncate_before_row_id=users[1], confirm_truncate=True
    )
    assert busy.code == 4009
    done = tui.wait_complete(sid, 4)
    tui.wait_idle(sid)
    assert done["status"] == "complete" and done["text"].startswith("t0 t1")
    assert len(tui.events(sid, "message.start")) == 4
    assert [m for m in _texts(tui, sid)][:6] == [
        "one",
        "You said: one",
        "two",
        "You said: two",
        "three",
        "You said: three",
    ]


def test_rewind_fails_closed_when_storage_fails(
    tmp_path: Path, spawn: Callable[..., TuiProcess], home: Path
) -> None:
    """Check 22: the archive write fails → 5008; history unchanged; no message.start follows."""
    dist = tmp_path / "dist"
    write_distribution(dist, "flakystore", {"flakystore": FLAKY_STORE}, {"flaky": "flakystore"})
    write_config(home, 'model = "mock:echo"\n[storage]\nbackend = "flaky"\n')
    tui = spawn(env={"PYTHONPATH": str(dist)})
    sid, users = _three_turns(tui)
    (home / "fail-rewrites").write_text("1")
    before = _texts(tui, sid)
    failed = tui.error(
        "prompt.submit", session_id=sid, text="x", truncate_before_row_id=users[1], confirm_truncate=True
    )
    assert failed.code == 5008
    assert _texts(tui, sid) == before
    assert tui.call("gateway.ping")["ok"]
    assert len(tui.events(sid, "message.start")) == 3
    (home / "fail-rewrites").unlink()
    ok = tui.call(
        "prompt.submit", session_id=sid, text="now", truncate_before_row_id=users[1], confirm_truncate=True
    )
    assert ok["survivor_user_row_ids"] == [users[0]]
