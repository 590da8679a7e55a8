"""``hermes chat`` when stdin is not a terminal: one prompt per line, plain text out.

Each line is a prompt (or a slash command, as typed in the terminal client); the next line is
read once the turn it started has finished. The reply goes to stdout as it streams, tool
activity and notices to stderr, like ``hermes run``. Nobody can answer questions here, so an
approval is denied and a clarify, password or secret question is answered empty, each said on
stderr. The exit code is 1 as soon as a turn fails (the remaining lines are not run), else 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Coroutine
from typing import Any, TextIO

from hermes_chat.client import ChatClient
from hermes_chat.controller import Controller, describe_error
from hermes_chat.link import Connector, LinkError
from hermes_chat.render import PlainPainter
from hermes_chat.rpc import ConnectionLost, RpcError
from hermes_chat.screen import Question, Screen

EXIT_OK, EXIT_FAILED = 0, 1


class PlainOutput:
    """Replies to stdout, everything else to stderr, each write flushed."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self._out, self._err = out, err

    def write(self, text: str, *, reply: bool = False) -> None:
        stream = self._out if reply else self._err
        stream.write(text)
        stream.flush()

    def refresh(self) -> None:
        return None


class _Connection:
    """The client's :class:`~hermes_chat.client.Listener` in plain mode."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen

    def event(self, session_id: str, kind: str, payload: dict[str, object], replayed: bool) -> None:
        self.screen.event(session_id, kind, payload, replayed)

    def connection(self, state: str, text: str) -> None:
        if state == "lost":
            self.screen.notice(f"{text}; reconnecting", "warn")
        elif state in ("back", "note"):
            self.screen.notice(text)

    def rebuilt(self, snapshot: dict[str, object]) -> None:
        self.screen.rebuilt(snapshot)


async def run_plain(
    connector: Connector,
    *,
    cwd: str,
    resume: str | None,
    continue_here: bool,
    model: str | None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run the line-by-line chat; return the exit code."""
    source = stdin or sys.stdin
    err = stderr or sys.stderr
    output = PlainOutput(stdout or sys.stdout, err)
    holder: list[ChatClient] = []
    screen = Screen(PlainPainter(), output, lambda: holder[0].session_id if holder else None, live=False)
    client = ChatClient(connector, _Connection(screen), cwd=cwd)
    holder.append(client)
    controller = Controller(client, screen)
    screen.on_question = lambda question: _decline(controller, question)
    try:
        await client.connect()
        snapshot = await client.open(resume=resume, continue_here=continue_here, model=model)
    except LinkError as exc:
        output.write(f"Error: {exc}\n")
        await client.close()
        return EXIT_FAILED
    except (RpcError, ConnectionLost) as exc:
        output.write(f"Error: {describe_error(exc) if isinstance(exc, RpcError) else exc}\n")
        await client.close()
        return EXIT_FAILED
    if resume is not None or continue_here:
        output.write(f"resumed session {snapshot.get('session_id')}\n")
        if model:
            await controller.command(f"/model {model}")
    supervisor = asyncio.create_task(client.supervise())
    code = EXIT_OK
    try:
        while True:
            line = await asyncio.to_thread(source.readline)
            if not line:
                break
            if not line.strip():
                continue
            before = screen.failed_turns
            await _race(controller.submit(line.rstrip("\n")), supervisor)
            await _race(controller.wait_settled(), supervisor)
            if screen.failed_turns > before:
                code = EXIT_FAILED
                break
    except LinkError as exc:
        output.write(f"Error: {exc}\n")
        code = EXIT_FAILED
    finally:
        supervisor.cancel()
        with contextlib.suppress(BaseException):
            await supervisor
        await client.close()
    return code


async def _race(work: Coroutine[Any, Any, None], supervisor: asyncio.Task[None]) -> None:
    """Run ``work`` unless the connection is given up first (then raise its error)."""
    task = asyncio.ensure_future(work)
    waited: set[asyncio.Future[None]] = {task, supervisor}
    await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()
        return
    task.cancel()
    with contextlib.suppress(BaseException):
        await task
    supervisor.result()  # raises the LinkError that ended it
    raise LinkError("the connection to the gateway ended")


def _decline(controller: Controller, question: Question) -> None:
    """Answer a question nobody can see: deny an approval, leave the others empty."""
    subject = question.payload.get("command") or question.payload.get("description")
    what = {
        "approval": f"approval needed for: {subject}",
        "clarify": f"question: {question.payload.get('question', '')}",
        "sudo": "a sudo password was asked for",
        "secret": f"a secret was asked for ({question.payload.get('env_var', '')})",
    }[question.kind]
    controller.screen.notice(f"{what} — no terminal to answer it", "warn")
    value = "deny" if question.kind == "approval" else ""
    controller.spawn(controller.answer(question, value))
