"""A Hermes process to kill mid-turn, for the event-log crash tests.

Usage: ``python event_log_child.py BACKEND TARGET SESSION_ID WORKSPACE`` (BACKEND ``sqlite`` with
a file path, or ``postgres`` with a DSN). It runs one long mock turn and shows its events the way
a transport does, each only once the log has stored it (``kernel.events.durable``): one line per
event, ``event <seq> <type>``, and every twenty events ``durable <seq>``. It never ends on its
own: the test kills it with SIGKILL.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from hermes_core import Kernel


async def main(backend: str, target: str, session_id: str, workspace: Path) -> None:
    storage = {"backend": backend, "path" if backend == "sqlite" else "dsn": target}
    kernel = Kernel.create(
        entry_points=["mock", backend],
        strict=True,
        settings={"model": "mock:echo", "storage": storage, "titles": {"refine": False}},
    )
    async with kernel.running():
        session = await kernel.open_session(session_id, source="cli", owner="child", cwd=workspace)
        turn = await session.submit("[[tokens 2000]] [[delay 15]]", owner="child")
        count = 0
        async for event in turn.events():
            # The first wait has the writer store everything queued; the next ones return at once.
            await kernel.events.durable(session.id, event.seq)
            print(f"event {event.seq} {type(event).__name__}", flush=True)
            count += 1
            if count % 20 == 0:
                print(f"durable {event.seq}", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])))
