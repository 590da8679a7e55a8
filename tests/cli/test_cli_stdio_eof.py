"""The stdio transports end cleanly when stdin is /dev/null (epoll cannot watch it).

Before, the loop's reader failed to register fd 0 in a callback and the process waited forever.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.cli_helpers import HERMES, clean_env


@pytest.mark.parametrize("command", ["acp", "tui"])
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
        assert line.startswith('{"jsonrpc":"2.0"'), line
