"""The non-wire commands: ``hermes acp --check`` and ``hermes acp --setup``
(docs/reference/acp.md#self-check, #interactive-setup)."""

from __future__ import annotations

import os
import pty
import select
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.acp.conftest import HERMES, Home
from tests.timing import scaled


def test_check_reports_ok(home: Home) -> None:
    """--check exits 0 with the OK line and never reads stdin."""
    done = subprocess.run(
        [HERMES, "acp", "--check"],
        env=home.env(),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.PIPE,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "Hermes ACP check: OK"
    assert any(line.startswith("ok   initialize") for line in lines)


def test_check_writes_nothing(home: Home) -> None:
    """--check on a fresh home creates no file (no database, no log); with a database it only reads."""
    home.write_config()
    before = sorted(p.relative_to(home.path) for p in home.path.rglob("*"))
    done = subprocess.run(
        [HERMES, "acp", "--check"], env=home.env(), capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   storage: opens read-only (0 stored sessions)" in done.stdout
    assert sorted(p.relative_to(home.path) for p in home.path.rglob("*")) == before

    # A real database with a session: reported, and its content left byte-for-byte as it was.
    # (SQLite's read-only open of a WAL database may add its -shm/-wal coordination files.)
    subprocess.run(
        [HERMES, "run", "hello"], env=home.env(), capture_output=True, text=True, timeout=30, check=True
    )
    database = home.path / "hermes.sqlite3"
    snapshot = {p: p.read_bytes() for p in home.path.rglob("*") if p.is_file()}
    done = subprocess.run(
        [HERMES, "acp", "--check"], env=home.env(), capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   storage: opens read-only (1 stored session)" in done.stdout
    assert database in snapshot
    after = {p: p.read_bytes() for p in home.path.rglob("*") if p.is_file()}
    assert {p: after[p] for p in snapshot} == snapshot
    assert {p.name for p in after.keys() - snapshot.keys()} <= {
        "hermes.sqlite3-shm",
        "hermes.sqlite3-wal",
    }


def test_check_fails_naming_a_broken_plugin(home: Home, tmp_path: Path) -> None:
    """--check exits 1 and names the plugin whose module fails to import."""
    shadow = tmp_path / "shadow" / "hermes_tools"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    (shadow / "plugin.py").write_text("raise ImportError('broken on purpose')\n")
    env = home.env(PYTHONPATH=str(shadow.parent))
    done = subprocess.run(
        [HERMES, "acp", "--check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL plugin tools" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("Hermes ACP check: FAILED")


def test_check_and_setup_are_exclusive(home: Home) -> None:
    """--check with --setup is a usage error (exit 2)."""
    done = subprocess.run(
        [HERMES, "acp", "--check", "--setup"],
        env=home.env(),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2


def test_setup_without_a_terminal_exits_2(home: Home) -> None:
    """--setup with stdin not a TTY exits 2 at once."""
    start = time.monotonic()
    done = subprocess.run(
        [HERMES, "acp", "--setup"],
        env=home.env(),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.PIPE,
    )
    assert done.returncode == 2
    assert time.monotonic() - start < scaled(10)


def _expect(fd: int, text: str, timeout: float = 15.0) -> str:
    seen = ""
    end = time.monotonic() + timeout
    while text not in seen:
        assert time.monotonic() < end, f"waiting for {text!r}; got {seen!r}"
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 4096).decode(errors="replace")
            except OSError:
                break
    return seen


async def test_setup_through_a_pty_writes_a_working_config(home: Home, spawn: Any) -> None:
    """--setup driven through a pty writes a mode-0600 config that makes authenticate succeed."""
    (home.path / "config.toml").unlink()
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [HERMES, "acp", "--setup"], stdin=slave, stdout=slave, stderr=slave, env=home.env(), close_fds=True
    )
    os.close(slave)
    try:
        _expect(master, "Provider")
        os.write(master, b"mock\n")
        listing = _expect(master, "Model (number")
        assert "3. alt" in listing  # the provider's offline catalog, numbered
        os.write(master, b"3\n")
        _expect(master, "wrote")
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    config = home.path / "config.toml"
    assert "mock:alt" in config.read_text()
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    agent = await spawn(initialize={})
    assert (await agent.request("authenticate", {"methodId": "hermes-config"})) == {}
    sid = (await agent.new(home.workspace))["sessionId"]
    await agent.prompt(sid, "hi")
    assert agent.text(sid).startswith("alt: ")
