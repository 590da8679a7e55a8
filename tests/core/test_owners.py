"""The kernel's owners: what transports ask through ``kernel.sessions``, ``kernel.providers``
and ``kernel.questions``, and the session API the turn machinery uses."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_core import ConfigError, Kernel, ProviderDirectory, QuestionBroker, Sessions
from hermes_core.testing import make_kernel

from .conftest import collect


def sqlite_kernel(tmp_path: Path) -> Kernel:
    return make_kernel(
        entry_points=["mock", "tools", "sqlite"],
        settings={
            "storage": {"backend": "sqlite", "path": str(tmp_path / "h.sqlite3")},
            "model": "mock:echo",
        },
    )


async def test_exists_knows_live_unsaved_stored_and_unknown_sessions(tmp_path: Path, workspace: Path) -> None:
    kernel = sqlite_kernel(tmp_path)
    async with kernel.running():
        assert isinstance(kernel.sessions, Sessions)
        assert await kernel.sessions.exists("nobody-has-this") is False
        fresh = await kernel.open_session(source="tui", owner="t", cwd=workspace)
        # Live but not stored yet (nothing is written before the first turn).
        assert await kernel.sessions.find(fresh.id) is None
        assert await kernel.sessions.exists(fresh.id) is True
        await fresh.close()
        assert await kernel.sessions.exists(fresh.id) is False  # never stored, now gone

        used = await kernel.open_session(source="tui", owner="t", cwd=workspace)
        await collect(await used.submit("hello", owner="t"))
        await used.close()
        assert kernel.sessions.get(used.id) is None
        assert await kernel.sessions.exists(used.id) is True
        record = await kernel.sessions.find(used.id)
        assert record is not None and record.source == "tui"

    # Another kernel on the same file sees the stored session without opening it.
    again = sqlite_kernel(tmp_path)
    async with again.running():
        assert await again.sessions.exists(used.id) is True
        assert again.sessions.live == []


async def test_provider_directory_answers_without_handing_out_providers(tmp_path: Path) -> None:
    kernel = make_kernel(entry_points=["mock"], settings={"model": "mock:echo"})
    with pytest.raises(ConfigError):
        kernel.providers.names()  # nothing is configured before the kernel runs
    async with kernel.running():
        directory = kernel.providers
        assert isinstance(directory, ProviderDirectory)
        assert directory.has("mock") and not directory.has("nope")
        assert "mock" in directory.names()
        assert "echo" in [m.id for m in await directory.offline_models("mock")]
        assert directory.missing_key_hint("mock") is None
        assert not hasattr(directory, "get")  # provider instances stay with the kernel


async def test_questions_is_one_broker_per_kernel(kernel: Kernel) -> None:
    assert isinstance(kernel.questions, QuestionBroker)
    assert kernel.questions is kernel.questions
    assert kernel.answer("no-such-request", "allow") == "unknown"


async def test_session_api_for_the_turn_machinery(kernel: Kernel, workspace: Path) -> None:
    session = await kernel.open_session(source="tui", owner="t", cwd=workspace)
    session.remember_approval(["shell:rm -rf build"])
    assert "shell:rm -rf build" in session.approved_keys

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    session.track_process(proc)
    session.untrack_process(proc)
    session.track_process(proc)
    await session.close()  # close kills the tracked process group
    await asyncio.wait_for(asyncio.to_thread(proc.wait), 20)
    assert proc.returncode is not None and proc.returncode != 0


async def test_model_owner_switch_and_status(tmp_path: Path) -> None:
    from hermes_core.testing import MemorySettingsStore

    store = MemorySettingsStore()
    kernel = make_kernel(entry_points=["mock"], settings={"model": "mock:echo"}, store=store)
    async with kernel.running():
        assert kernel.models.default == "mock:echo" and kernel.default_model == "mock:echo"
        resolved = await kernel.models.switch("mock:script")
        assert resolved.ref == "mock:script" == kernel.models.default
        status = kernel.models.status()
        assert (status.model, status.source, status.problem) == ("mock:script", "config", None)
        assert kernel.settings.model == "mock:script"
        assert store.get("model") == "mock:script"  # written to the settings store
