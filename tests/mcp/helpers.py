"""Shared pieces of the MCP tests: the tiny server's command line and a kernel driving it."""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_core import ALL_KINDS, Event, Kernel, QuestionRequested, Session, ToolCompleted
from hermes_core.testing import make_kernel

TINY = str(Path(__file__).with_name("tiny_server.py"))


def stdio_server(**extra: Any) -> dict[str, Any]:
    """A ``[mcp_servers.NAME]`` table running the tiny server over stdio."""
    return {"command": sys.executable, "args": [TINY], "connect_timeout_s": 60, **extra}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def kernel_with(servers: dict[str, Any], **settings: Any) -> Kernel:
    return make_kernel(
        entry_points=["mock", "mcp"], settings={"model": "mock:echo", "mcp_servers": servers, **settings}
    )


async def run_turn(
    session: Session, text: str, answer: Callable[[QuestionRequested], str] | None = None
) -> tuple[list[Event], list[ToolCompleted]]:
    """Submit ``text``, answer approval questions with ``answer`` and return the events.

    With ``answer`` the turn declares every question kind answerable; without it, none (the
    default of ``Session.submit``: questions are refused at once).
    """
    kinds = ALL_KINDS if answer is not None else frozenset()
    turn = await session.submit(text, owner="t", answerable=kinds)
    events: list[Event] = []
    async for event in turn.events():
        events.append(event)
        if isinstance(event, QuestionRequested) and answer is not None:
            session.kernel.answer(event.request_id, answer(event))
    await turn.outcome
    return events, [e for e in events if isinstance(e, ToolCompleted)]
