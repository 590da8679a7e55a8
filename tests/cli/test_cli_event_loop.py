"""The event loop every command runs on: uvloop by default, asyncio on request, a typo refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
import pytest

from hermes_cli import event_loop
from tests.cli.cli_helpers import Hermes


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_uvloop_is_the_default_where_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("uvloop")
    monkeypatch.delenv(event_loop.LOOP_VARIABLE, raising=False)
    assert event_loop.run(_loop_module()).startswith("uvloop")


def test_the_variable_picks_the_standard_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(event_loop.LOOP_VARIABLE, "asyncio")
    assert event_loop.run(_loop_module()).startswith("asyncio")


def test_an_unknown_loop_name_is_refused_before_anything_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(event_loop.LOOP_VARIABLE, "tokio")
    ran: list[bool] = []

    async def body() -> None:
        ran.append(True)

    with pytest.raises(click.ClickException, match=r"HERMES_EVENT_LOOP='tokio'.*uvloop or asyncio"):
        event_loop.run(body())
    assert ran == []


@pytest.mark.parametrize("loop", ["", "asyncio", "uvloop"])
def test_a_turn_runs_on_each_loop(hermes: Hermes, loop: str) -> None:
    if loop == "uvloop":
        pytest.importorskip("uvloop")
    result = hermes("run", "hello", env={"HERMES_EVENT_LOOP": loop} if loop else None)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "You said: hello\n"


def test_a_bad_loop_name_fails_the_command_cleanly(hermes: Hermes, home: Path) -> None:
    result = hermes("run", "--session", "never", "hello", env={"HERMES_EVENT_LOOP": "tokio"})
    assert result.returncode != 0
    assert "HERMES_EVENT_LOOP='tokio' is not a known event loop" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert "never" not in hermes("sessions", "list").stdout
