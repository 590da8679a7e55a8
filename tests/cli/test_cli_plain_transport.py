"""``hermes tui`` given alone runs without click (hermes_cli/transport_run.py).

It must end exactly as the click command does: the same exit code and the same lines on stderr,
each warning once, also when it hands over to click (a disabled plugin). The same command with
an option given goes through click and is the reference.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.cli_helpers import HERMES, clean_env
from tests.timing import scaled

CONFIG = 'model = "mock:echo"\nmodle = "mock:echo"\n'  # a typo: one warning
WARNING = "unknown key: modle (did you mean model?)"


def _hermes(home: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HERMES, *args],
        input="",
        env=clean_env(home, env),
        cwd=str(home),
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )


@pytest.mark.parametrize(
    ("env", "code", "error"),
    [
        (
            {"HERMES_EVENT_LOOP": "tokio"},
            1,
            "Error: HERMES_EVENT_LOOP='tokio' is not a known event loop; use uvloop or asyncio",
        ),
        ({"HERMES_DISABLE_PLUGINS": "tui"}, 2, "Error: plugin 'tui' is not loaded"),
    ],
)
def test_a_failing_start_ends_as_through_click(
    home: Path, env: dict[str, str], code: int, error: str
) -> None:
    (home / "config.toml").write_text(CONFIG, encoding="utf-8")
    plain = _hermes(home, "tui", env=env)
    through_click = _hermes(home, "tui", "--orphan-grace", "5", env=env)
    assert plain.returncode == through_click.returncode == code
    assert plain.stderr == through_click.stderr
    assert plain.stderr.count(WARNING) == 1
    assert error in plain.stderr
    assert "Traceback" not in plain.stderr
    assert plain.stdout == through_click.stdout == ""


def test_the_gateway_starts_and_ends_on_end_of_input(home: Path) -> None:
    (home / "config.toml").write_text(CONFIG, encoding="utf-8")
    plain = _hermes(home, "tui", env={})
    assert plain.returncode == 0, plain.stderr
    assert '"gateway.ready"' in plain.stdout
    assert plain.stderr.count(WARNING) == 1
