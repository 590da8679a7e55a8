"""Embed Hermes in a Python program: one session, one turn, events as they stream.

Run it from a checkout with the project installed: ``python docs/examples/embed.py``.
It uses the offline ``mock`` model and in-memory storage, so it needs no key and writes nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from hermes_core import Kernel, TextDelta, ToolCompleted, TurnCompleted


async def main() -> None:
    kernel = Kernel.create(
        entry_points=["mock", "tools"],  # an allowlist of installed plugins (True = all)
        strict=True,  # a broken plugin raises instead of being recorded
        settings={"model": "mock:echo", "storage": {"backend": "memory"}},
    )
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=Path.cwd())
        turn = await session.submit('Look around [[tool list_dir {"path": "."}]]', owner="me")
        async for event in turn.events():
            if isinstance(event, TextDelta):
                print(event.text, end="", flush=True)
            elif isinstance(event, ToolCompleted):
                print(f"[tool {event.name} finished, error={event.is_error}]")
            elif isinstance(event, TurnCompleted):
                print()
        outcome = await turn.outcome
        print(f"outcome: {outcome.status} ({outcome.reason})")
        await session.close()


if __name__ == "__main__":
    asyncio.run(main())
