"""Cross-process behaviour: the writer lease between two real processes, sudo via a fake binary."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hermes_core import ALL_KINDS, QuestionRequested, SessionInUse, ToolCompleted, ToolProgress
from hermes_core.testing import make_kernel
from tests.core.conftest import collect
from tests.timing import eventually, scaled

HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from hermes_core.testing import make_kernel

    async def main():
        db, sid, cwd = sys.argv[1], sys.argv[2], sys.argv[3]
        k = make_kernel(entry_points=["mock", "sqlite"],
                        settings={"storage": {"backend": "sqlite", "path": db}})
        async with k.running():
            s = await k.open_session(sid, source="cli", owner="other", cwd=Path(cwd))
            turn = await s.submit("held elsewhere", owner="other")
            await turn.outcome
            print("HOLDING", k.lease_owner, flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            await s.close()
            print("RELEASED", flush=True)

    asyncio.run(main())
    """
)


async def test_writer_lease_across_two_processes(tmp_path: Path, workspace: Path) -> None:
    db = tmp_path / "shared.sqlite3"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db), "shared-session", str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        line = await asyncio.get_running_loop().run_in_executor(None, proc.stdout.readline)
        assert line.startswith("HOLDING "), line
        owner = line.split()[1]
        kernel = make_kernel(
            entry_points=["mock", "sqlite"], settings={"storage": {"backend": "sqlite", "path": str(db)}}
        )
        async with kernel.running():
            with pytest.raises(SessionInUse) as err:
                await kernel.open_session("shared-session", source="cli", owner="me", cwd=workspace)
            assert err.value.owner == owner
            stored = await kernel.sessions.stored("shared-session")  # reads need no lease
            assert [r.content for r in stored.rows] == ["held elsewhere", "You said: held elsewhere"]
            proc.stdin.write("\n")
            proc.stdin.flush()
            line = await asyncio.get_running_loop().run_in_executor(None, proc.stdout.readline)
            assert line.strip() == "RELEASED"
            session = await kernel.open_session("shared-session", source="cli", owner="me", cwd=workspace)
            events = await collect(await session.submit("mine now", owner="me"))
            assert events[-1].outcome.reason == "stop"
    finally:
        proc.kill()
        proc.wait()


FAKE_SUDO = """#!/bin/sh
# A stand-in for sudo: -n always fails (a password is needed); -S checks the password.
if [ "$1" = "-n" ]; then exit 1; fi
if [ "$1" = "-S" ]; then
  shift
  read pw
  if [ "$pw" != "hunter2" ]; then echo "sudo: wrong password" >&2; exit 1; fi
  exec "$@"
fi
exit 1
"""


@pytest.fixture
def fake_sudo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    sudo = bindir / "sudo"
    sudo.write_text(FAKE_SUDO)
    sudo.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return bindir


async def _sudo_turn(workspace: Path, password: str | None) -> tuple[list[Any], Path]:
    marker = workspace / "ran.txt"
    kernel = make_kernel(entry_points=["mock", "tools"])
    async with kernel.running():
        session = await kernel.open_session(source="tui", owner="t", cwd=workspace, profile="accept_edits")
        turn = await session.submit(f"[[sudo touch {marker}]]", owner="t", answerable=ALL_KINDS)
        events = []
        async for ev in turn.events():
            events.append(ev)
            if isinstance(ev, QuestionRequested):
                if ev.kind == "approval":
                    assert "guard:sudo" in ev.approval_keys
                    kernel.answer(ev.request_id, "once")
                elif ev.kind == "sudo" and password is not None:
                    assert ev.command and "touch" in ev.command
                    kernel.answer(ev.request_id, password)
                elif ev.kind == "sudo":
                    kernel.answer(ev.request_id, "")
    return events, marker


async def test_sudo_asks_approval_then_password_and_runs(fake_sudo: Path, workspace: Path) -> None:
    events, marker = await _sudo_turn(workspace, "hunter2")
    kinds = [e.kind for e in events if isinstance(e, QuestionRequested)]
    assert kinds == ["approval", "sudo"]
    assert marker.exists()
    assert all("hunter2" not in repr(e) for e in events)


async def test_sudo_without_a_password_runs_nothing(fake_sudo: Path, workspace: Path) -> None:
    events, marker = await _sudo_turn(workspace, None)
    result = next(e for e in events if isinstance(e, ToolCompleted))
    assert result.is_error and "sudo needs a password" in result.result_text
    assert not marker.exists()


async def test_terminal_output_streams_as_progress(workspace: Path) -> None:
    kernel = make_kernel(entry_points=["mock", "tools"])
    async with kernel.running():
        session = await kernel.open_session(source="tui", owner="t", cwd=workspace, profile="off")
        cmd = json.dumps({"command": "echo first; sleep 0.2; echo second"})
        events = await collect(await session.submit(f"[[tool terminal {cmd}]]", owner="t"))
        progress = [e for e in events if isinstance(e, ToolProgress)]
        assert progress and "first" in progress[0].chunk
        assert "second" in progress[-1].tail
        done = next(e for e in events if isinstance(e, ToolCompleted))
        assert not done.is_error and "second" in done.result_text


async def test_stop_processes_ends_background_commands(workspace: Path) -> None:
    kernel = make_kernel(entry_points=["mock", "tools"])
    async with kernel.running():
        session = await kernel.open_session(source="tui", owner="t", cwd=workspace, profile="off")
        # A background command that ignores SIGTERM: the grace period ends it with SIGKILL.
        cmd = json.dumps({"command": "trap '' TERM; echo $$ > pid.txt; sleep 60", "background": True})
        events = await collect(await session.submit(f"[[tool terminal {cmd}]]", owner="t"))
        assert not next(e for e in events if isinstance(e, ToolCompleted)).is_error
        pid_file = workspace / "pid.txt"
        await eventually(lambda: pid_file.exists() and pid_file.read_text().strip(), what="pid.txt")
        pid = int(pid_file.read_text())
        started = asyncio.get_running_loop().time()
        assert await session.stop_processes(grace=0.3) == 1
        assert asyncio.get_running_loop().time() - started < scaled(3)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        assert await session.stop_processes() == 0
