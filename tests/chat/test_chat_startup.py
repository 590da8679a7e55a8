"""Start-up of the interactive chat when the gateway is slow: the screen follows the session.

The chat is the real one on a real ``hermes tui``; only the terminal is replaced (a pipe for
the keyboard, a recorded output that, like a terminal that ignores them, never answers cursor
position requests). Between the two, a link holds the gateway's frames where the test says,
so the order of events that was a rare race on a loaded machine happens every time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output

from hermes_chat.app import ChatApp
from hermes_chat.link import Frame, Link, SpawnConnector, gateway_argv
from tests.chat.keyboard import ANSI, ENTER, Keyboard, Recorder
from tests.timing import eventually, scaled

CPR_WARNING = "doesn't support cursor position requests"


@dataclass
class Gate:
    """Where the gateway's frames are held: its answer to ``session.create``, then the rest."""

    answer: asyncio.Event = field(default_factory=asyncio.Event)
    rest: asyncio.Event = field(default_factory=asyncio.Event)
    holding_answer: asyncio.Event = field(default_factory=asyncio.Event)
    create_id: Any = None
    answered: bool = False
    sent: list[Frame] = field(default_factory=list)


class HeldLink:
    """A real link whose incoming frames wait at the :class:`Gate`."""

    def __init__(self, link: Link, gate: Gate) -> None:
        self.link = link
        self.gate = gate

    @property
    def ended(self) -> str:
        return self.link.ended

    @ended.setter
    def ended(self, value: str) -> None:
        self.link.ended = value

    @property
    def fatal(self) -> bool:
        return self.link.fatal

    @fatal.setter
    def fatal(self, value: bool) -> None:
        self.link.fatal = value

    async def send(self, frame: Frame) -> None:
        self.gate.sent.append(frame)
        if frame.get("method") == "session.create":
            self.gate.create_id = frame.get("id")
        await self.link.send(frame)

    async def receive(self) -> Frame | None:
        frame = await self.link.receive()
        gate = self.gate
        if frame is None:
            return None
        if not gate.answered and gate.create_id is not None and frame.get("id") == gate.create_id:
            gate.holding_answer.set()
            await gate.answer.wait()
            gate.answered = True
        elif gate.answered:
            await gate.rest.wait()  # session.info and everything after it
        return frame

    async def close(self) -> None:
        await self.link.close()


class HeldConnector:
    """Spawns the real gateway; every link it makes is held at the gate."""

    kind = "spawned"

    def __init__(self, inner: SpawnConnector, gate: Gate) -> None:
        self.inner = inner
        self.gate = gate

    def describe(self) -> str:
        return self.inner.describe()

    async def connect(self) -> Link:
        return HeldLink(await self.inner.connect(), self.gate)


@dataclass
class SlowStart:
    """The chat under test, the gate its gateway's frames wait at, and its terminal's size."""

    chat: Keyboard
    gate: Gate
    size: list[Size]


@pytest.fixture
async def slow_start(scrubbed: Path, work: Path) -> AsyncIterator[SlowStart]:
    gate = Gate()
    recorded = Recorder()
    size = [Size(rows=40, columns=100)]  # the test may resize the terminal
    output = Vt100_Output(recorded, lambda: size[0], term="xterm-256color", enable_cpr=True)  # never answered
    inner = SpawnConnector(gateway_argv([]), str(work), scrubbed / "logs" / "chat-gateway.log")
    connector = HeldConnector(inner, gate)
    with create_pipe_input() as pipe:
        app = ChatApp(connector, cwd=str(work), data_dir=scrubbed, pt_input=pipe, pt_output=output)
        task = asyncio.create_task(app.run(resume=None, continue_here=False, model=None))
        keyboard = Keyboard(app, pipe, recorded, task)
        try:
            yield SlowStart(keyboard, gate, size)
        finally:
            gate.answer.set()
            gate.rest.set()
            app.exit()
            await asyncio.wait_for(task, scaled(60))


async def test_the_toolbar_shows_the_session_once_open_even_with_no_event_after_it(
    slow_start: SlowStart,
) -> None:
    """The gateway answers ``session.create`` after prompt_toolkit gave up on the cursor position
    request (2 s), and its next event is late: the screen must show the open session anyway."""
    chat, gate = slow_start.chat, slow_start.gate
    await eventually(gate.holding_answer.is_set, timeout=60, what="the answer to session.create")
    assert "opening the session…" in chat.text()
    await chat.shows(CPR_WARNING, timeout=30)  # the 2 s CPR timeout ran first
    assert "mock:echo" not in chat.text()
    mark = len(chat.text())
    gate.answer.set()
    await chat.until(lambda: chat.app.session_open, timeout=30, what="the session")
    await eventually(
        lambda: "mock:echo" in chat.text()[mark:], timeout=5, what="the open session in the toolbar"
    )
    assert chat.app.link_state == ""
    gate.rest.set()
    chat.send("hello after a slow start", ENTER)
    await chat.shows("You said: hello after a slow start")


async def test_a_prompt_typed_while_the_session_opens_slowly_is_sent_once_it_is_open(
    slow_start: SlowStart,
) -> None:
    chat, gate = slow_start.chat, slow_start.gate
    await eventually(gate.holding_answer.is_set, timeout=60, what="the answer to session.create")
    chat.send("typed early", ENTER)
    await chat.shows("typed early")
    await chat.shows(CPR_WARNING, timeout=30)
    committed = scrollback(chat)
    gate.answer.set()
    gate.rest.set()
    await chat.shows("You said: typed early")
    await chat.idle()
    # Sent once, and written into the scrollback once. (The terminal's byte stream may hold the
    # reply twice: drawn in the live area while it streams, then printed to the scrollback; that
    # is one reply on screen.)
    assert [p.get("text") for p in sent(gate, "prompt.submit")] == ["typed early"]
    assert "".join(committed).count("You said: typed early") == 1


async def test_a_prompt_typed_while_the_session_opens_does_not_wait_for_the_command_list(
    slow_start: SlowStart,
) -> None:
    """The command and model lists feed completion only: a prompt typed early is sent as soon as
    the session is open, while the answer to ``commands.catalog`` is still on its way."""
    chat, gate = slow_start.chat, slow_start.gate
    await eventually(gate.holding_answer.is_set, timeout=60, what="the answer to session.create")
    chat.send("typed before the session", ENTER)
    await chat.shows("typed before the session")
    gate.answer.set()  # the session opens; every frame after that answer stays held
    await eventually(lambda: sent(gate, "prompt.submit"), timeout=30, what="the early prompt sent")
    assert sent(gate, "prompt.submit") == [
        {"session_id": chat.app.client.session_id, "text": "typed before the session"}
    ]
    gate.rest.set()
    await chat.shows("You said: typed before the session")
    await eventually(lambda: sent(gate, "commands.catalog"), what="the command list asked for")


def scrollback(chat: Keyboard) -> list[str]:
    """Start keeping what the chat writes into the scrollback (not what it redraws below it)."""
    kept: list[str] = []
    out = chat.app.out
    write = out.write

    def keeping(text: str, **kwargs: Any) -> None:
        kept.append(ANSI.sub("", text))
        write(text, **kwargs)

    out.write = keeping  # type: ignore[method-assign]
    return kept


def sent(gate: Gate, method: str) -> list[dict[str, Any]]:
    """Return the params of every ``method`` request the chat sent."""
    return [dict(f.get("params") or {}) for f in gate.sent if f.get("method") == method]


async def test_the_session_gets_the_terminal_width_and_follows_a_resize(
    slow_start: SlowStart,
) -> None:
    chat, gate = slow_start.chat, slow_start.gate
    gate.answer.set()
    gate.rest.set()
    await chat.until(lambda: chat.app.session_open, what="the session")
    assert [p.get("cols") for p in sent(gate, "session.create")] == [100]
    slow_start.size[0] = Size(rows=40, columns=132)
    chat.app.application.invalidate()  # what a SIGWINCH does after prompt_toolkit erased the screen
    await eventually(lambda: sent(gate, "terminal.resize"), what="terminal.resize")
    resized = sent(gate, "terminal.resize")
    assert resized == [{"session_id": chat.app.client.session_id, "cols": 132}]
