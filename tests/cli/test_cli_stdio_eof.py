"""The stdio transports end cleanly when stdin is /dev/null (epoll cannot watch it).

Before, the loop's reader failed to register fd 0 in a callback and the process waited forever.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.cli_helpers import HERMES, clean_env


@pytest.mark.parametrize("command", ["acp", "tui", "pi"])
def test_stdin_from_dev_null_ends_at_once(tmp_path: Path, command: str) -> None:
    (tmp_path / "config.toml").write_text('model = "mock:script"\n', encoding="utf-8")
    done = subprocess.run(
        [HERMES, command],
        env=clean_env(tmp_path),
        cwd=str(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Exception in callback" not in done.stderr
    for line in done.stdout.splitlines():  # only protocol frames on stdout
        if command == "pi":  # pi's records are JSON objects, not JSON-RPC
            assert isinstance(json.loads(line), dict), line
        else:
            assert line.startswith('{"jsonrpc":"2.0"'), line


def _closing(fd: int) -> Callable[[], None]:
    """Return a preexec hook that closes ``fd`` in the child, as a careless launcher would."""
    return lambda: os.close(fd)


@pytest.mark.parametrize("command", ["acp", "tui", "pi"])
@pytest.mark.parametrize("closed", [0, 1])
def test_a_closed_standard_descriptor_is_survived(tmp_path: Path, command: str, closed: int) -> None:
    """With stdin or stdout closed by the parent, the transport starts and ends cleanly (exit 0).

    Before, the event loop's wake-up socket took the free number 1 and the process failed with
    EINVAL and a pending-task traceback.
    """
    (tmp_path / "config.toml").write_text('model = "mock:script"\n', encoding="utf-8")
    done = subprocess.run(
        [HERMES, command],
        env=clean_env(tmp_path),
        cwd=str(tmp_path),
        input=b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n',
        capture_output=True,
        timeout=20,
        check=False,
        preexec_fn=_closing(closed),
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr


def test_version_with_stdout_closed(tmp_path: Path) -> None:
    """``hermes --version`` with fd 1 closed exits 0 instead of failing on sys.stdout = None."""
    done = subprocess.run(
        [HERMES, "--version"],
        env=clean_env(tmp_path),
        capture_output=True,
        timeout=20,
        check=False,
        preexec_fn=_closing(1),
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b""
