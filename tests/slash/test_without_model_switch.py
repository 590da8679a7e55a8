"""With the ``model-switch`` plugin disabled, ``/model`` is gone and every other command still works.

Checked twice: through ``make_kernel`` without the entry point, and through the real ``hermes``
CLI with ``HERMES_DISABLE_PLUGINS=model-switch``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_core import Kernel, Session
from hermes_core.testing import make_kernel

from .helpers import data, reply, run, start_slow_turn
from .test_help import FIRST_PARTY


@pytest.fixture
async def bare_kernel() -> AsyncIterator[Kernel]:
    """Yield a running kernel with mock and slash but not model-switch."""
    k = make_kernel(entry_points=["mock", "slash"], settings={"model": "mock:echo"})
    async with k.running():
        yield k


async def test_help_has_no_model_command(bare_kernel: Kernel) -> None:
    result = await run(bare_kernel, None, "/help")
    assert "/model" not in (result.output or "")
    assert "Model:" not in (result.output or "")
    names = {c["name"] for c in data(result)["commands"]}
    assert names == FIRST_PARTY - {"model"}


async def test_model_text_is_not_a_command_and_goes_to_the_model(
    bare_kernel: Kernel, workspace: Path
) -> None:
    session = await bare_kernel.open_session(source="cli", owner="t", cwd=workspace)
    assert await bare_kernel.dispatch_slash(session, "/model mock:alt", surface="tui") is None
    assert await reply(session, "/model mock:alt") == "You said: /model mock:alt"
    assert session.info().model == "mock:echo"


async def test_every_other_command_still_works(bare_kernel: Kernel, workspace: Path) -> None:
    session: Session = await bare_kernel.open_session(source="cli", owner="t", cwd=workspace)
    assert (await run(bare_kernel, session, "/title Without model switch")).output == (
        "Title set to: Without model switch (saved with the first message)"
    )
    for text in ("one", "two", "three"):
        await reply(session, text)
    usage = await run(bare_kernel, session, "/usage")
    assert "over 3 model calls" in (usage.output or "")
    status = await run(bare_kernel, session, "/status")
    assert "Model: mock:echo" in (status.output or "")
    compressed = await run(bare_kernel, session, "/compress")
    assert data(compressed)["archived"] == 4
    branched = await run(bare_kernel, session, "/fork")
    child = bare_kernel.live_session(data(branched)["session_id"])
    assert child is not None and child.info().title == "Without model switch (branch)"
    await child.close()
    turn = await start_slow_turn(session)
    assert (await run(bare_kernel, session, "/stop")).output == "Stopped the running turn."
    assert (await turn.outcome).status == "interrupted"


# -- the real CLI ---------------------------------------------------------------------------

HERMES = shutil.which("hermes", path=str(Path(sys.executable).parent))


def hermes_run(home: Path, prompt: str, *, disable: str | None) -> subprocess.CompletedProcess[str]:
    """Run ``hermes run PROMPT`` in a clean environment rooted at ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "ANTHROPIC_"))}
    env.pop("PYTHONPATH", None)
    env.update(
        {"HERMES_HOME": str(home), "HERMES_MODEL": "mock:echo", "XDG_CACHE_HOME": str(home / ".cache")}
    )
    if disable is not None:
        env["HERMES_DISABLE_PLUGINS"] = disable
    assert HERMES is not None
    return subprocess.run(
        [HERMES, "run", prompt], env=env, cwd=home, capture_output=True, text=True, timeout=30, check=False
    )


def test_cli_without_model_switch(tmp_path: Path) -> None:
    helped = hermes_run(tmp_path, "/help", disable="model-switch")
    assert helped.returncode == 0, helped.stderr
    assert "/compress [FOCUS]" in helped.stdout and "/branch [TITLE]" in helped.stdout
    assert "/model" not in helped.stdout
    sent = hermes_run(tmp_path, "/model mock:alt", disable="model-switch")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout == "You said: /model mock:alt\n"
    status = hermes_run(tmp_path, "/status", disable="model-switch")
    assert status.returncode == 0, status.stderr
    assert "Model: mock:echo" in status.stdout
    history = hermes_run(tmp_path, "/history", disable="model-switch")
    assert (history.returncode, history.stdout) == (0, "No messages yet.\n"), history.stderr


def test_cli_with_model_switch(tmp_path: Path) -> None:
    switched = hermes_run(tmp_path, "/model mock:alt", disable=None)
    assert switched.returncode == 0, switched.stderr
    assert switched.stdout == "Model switched to mock:alt (this session)\n"
    helped = hermes_run(tmp_path, "/help model", disable=None)
    assert helped.stdout.startswith("/model [--once | --global] [PROVIDER:MODEL]\n")
    stopped = hermes_run(tmp_path, "/stop", disable=None)
    assert stopped.returncode != 0
    assert "/stop is not available here (cli)" in stopped.stderr
    assert stopped.stdout == ""
