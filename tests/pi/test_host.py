"""What ``hermes pi`` keeps when the core refuses a message it submits
(docs/reference/pi.md#steer-follow-up-and-the-queue, #bash)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hermes_core import SessionBusy, TextPart
from hermes_core.testing import make_kernel
from hermes_pi import commands_run
from hermes_pi.bash import BashRecord
from hermes_pi.host import Flags, PiHost
from hermes_pi.queue import Pending
from hermes_pi.settings import PiSettings
from hermes_pi.wire import Command
from tests.timing import scaled


class _Channel:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def send(self, record: dict[str, Any]) -> bool:
        self.records.append(record)
        return True

    def send_frame(self, frame: bytes) -> bool:
        return True


async def test_a_refused_submit_loses_neither_bash_output_nor_queued_messages() -> None:
    kernel = make_kernel(entry_points=["mock"], settings={"model": "mock:script"})
    async with kernel.running():
        host = PiHost(kernel, PiSettings(), _Channel(), Flags(no_session=True))  # type: ignore[arg-type]
        host.attach(await host.open_session())
        host.bash.pending.append(BashRecord("echo hi", "hi\n", 0, False, False, None, False, 0.0))

        async def refuse(*args: Any, **kw: Any) -> Any:
            raise SessionBusy("queue_full", "refused for the test")

        host.session.submit = refuse  # type: ignore[method-assign]
        with pytest.raises(SessionBusy):
            await host.start_run([TextPart("go")])
        assert [r.command for r in host.bash.pending] == ["echo hi"]
        assert not host.stream.active

        host.queue.held_follow.extend([Pending([TextPart("first")]), Pending([TextPart("second")])])
        host.queue.held_steer.append(Pending([TextPart("steer")]))
        with pytest.raises(SessionBusy):
            await host._submit_next()
        assert [p.text for p in host.queue.held_steer] == ["steer"]
        host.queue.held_steer.clear()
        with pytest.raises(SessionBusy):
            await host._submit_next()
        assert [p.text for p in host.queue.held_follow] == ["first", "second"]
        assert [r.command for r in host.bash.pending] == ["echo hi"]
        await host.close()


async def test_a_prompt_and_an_abort_while_the_session_is_replaced_are_both_answered() -> None:
    """Commands that run while ``replace`` closes the old session act on the new one; the abort
    returns once that run has settled (it once waited forever on the closed session's stream)."""
    kernel = make_kernel(entry_points=["mock"], settings={"model": "mock:script"})
    async with kernel.running():
        channel = _Channel()
        host = PiHost(kernel, PiSettings(), channel, Flags(no_session=True))  # type: ignore[arg-type]
        old = await host.open_session()
        host.attach(old)
        new = await host.open_session()
        close_old = old.close
        aborts: list[asyncio.Task[None]] = []

        async def close_while_commands_arrive() -> None:
            # What a prompt and an abort read from stdin at this moment do.
            assert await commands_run.prompt(host, Command({"type": "prompt", "message": "late"})) == {
                "disposition": "started"
            }
            aborts.append(asyncio.create_task(host.abort()))
            await asyncio.sleep(0)
            await close_old()

        old.close = close_while_commands_arrive  # type: ignore[method-assign]
        await host.replace(new)
        await asyncio.wait_for(aborts[0], scaled(10))
        assert host.session is new and not host.stream.active
        assert [r["type"] for r in channel.records].count("agent_settled") == 1
        await host.close()
