"""Key handling of the interactive chat, in process: pipe input, recorded output, real gateway."""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input

from hermes_chat.composer import history_path
from tests.chat.keyboard import (
    ALT_ENTER,
    CTRL_C,
    ENTER,
    ESC_ESC,
    TAB,
    UP,
    Keyboard,
    bracketed,
    start_chat,
)

GUARDED = '[[tool terminal {"command": "echo hermes-guard-test"}]]'


@pytest.fixture
async def chat(scrubbed: Path, work: Path) -> AsyncIterator[Keyboard]:
    with create_pipe_input() as pipe:
        keyboard = await start_chat(scrubbed, work, pipe)
        yield keyboard
        keyboard.app.exit()
        await asyncio.wait_for(keyboard.task, 60)


async def test_enter_sends_and_alt_enter_or_a_backslash_adds_a_line(chat: Keyboard) -> None:
    chat.send("line one", ALT_ENTER, "line two\\", ENTER, "line three", ENTER)
    shown = await chat.shows("You said: line one")
    assert "❯ line one\n  line two\n  line three" in shown  # one prompt of three lines
    assert chat.app.input_buffer.text == ""


async def test_an_approval_takes_one_key_and_ignores_others(chat: Keyboard) -> None:
    chat.send(f"run {GUARDED}", ENTER)
    await chat.until(lambda: chat.app.question is not None, what="the approval")
    chat.send("x", "q", ENTER)  # not answers: the question stays and nothing is typed
    await asyncio.sleep(0)
    assert chat.app.question is not None and chat.app.input_buffer.text == ""
    chat.send("d")
    shown = await chat.shows("The user declined this tool call")
    assert "denied: echo hermes-guard-test" in shown


async def test_clarify_takes_a_number_or_a_typed_answer(chat: Keyboard) -> None:
    chat.send('q [[tool clarify {"question": "Which?", "choices": ["red", "blue"]}]]', ENTER)
    await chat.until(lambda: chat.app.question is not None, what="the question")
    chat.send("1")
    await chat.shows("Done: The user answered: red")
    chat.send('q [[tool clarify {"question": "Which?", "choices": ["red", "blue"]}]]', ENTER)
    await chat.until(lambda: chat.app.question is not None, what="the second question")
    chat.send("grey, 12 shades", ENTER)  # a digit picks only on an empty input; after text it is text
    await chat.shows("Done: The user answered: grey, 12 shades")


async def test_a_secret_is_typed_hidden_and_kept_nowhere(chat: Keyboard, scrubbed: Path, work: Path) -> None:
    secret = "sk-live-DO-NOT-SHOW-31337"
    chat.send("keep [[secret API_TOKEN]]", ENTER)
    await chat.until(chat.app.hidden_input, what="the hidden field")
    chat.send(secret)
    await chat.until(lambda: chat.app.secret_buffer.text == secret, what="the typed secret")
    chat.send(ENTER)
    await chat.shows("API_TOKEN: value given (hidden)")
    await chat.shows("Done: stored: API_TOKEN")
    assert secret not in chat.recorded.getvalue()
    assert chat.app.input_buffer.history.get_strings() == ["keep [[secret API_TOKEN]]"]
    history = history_path(scrubbed, work).read_text(encoding="utf-8")
    assert "keep [[secret API_TOKEN]]" in history and secret not in history


async def test_ctrl_c_clears_interrupts_and_twice_leaves(chat: Keyboard) -> None:
    chat.send("typed, then dropped")
    await chat.until(lambda: chat.app.input_buffer.text == "typed, then dropped")
    chat.send(CTRL_C)  # idle with text: clears the input
    await chat.until(lambda: chat.app.input_buffer.text == "", what="a cleared input")
    chat.send("go [[tokens 5000]] [[delay 20]]", ENTER)  # a prompt resets the two-second window
    await chat.shows("t10 ")
    chat.send(CTRL_C)
    await chat.shows("⚠ interrupted")
    await chat.idle()
    assert not chat.task.done()
    chat.send("again [[tokens 5000]] [[delay 20]]", ENTER)
    await chat.shows("t10 ", count=2)
    chat.send(CTRL_C, CTRL_C)  # the second within 2 s of the first: leave, even mid-turn
    assert await asyncio.wait_for(chat.task, 30) == 0


async def test_esc_esc_steers_the_running_turn(chat: Keyboard) -> None:
    chat.send('go [[tool terminal {"command": "sleep 2 && echo slept"}]]', ENTER)
    await chat.until(lambda: chat.app.screen.running, what="the tool to start")
    chat.send("keep it short", ESC_ESC)
    await chat.shows("↪ steering: keep it short")
    shown = await chat.shows("Done: slept")
    assert "Steer: keep it short" in shown


async def test_every_command_of_the_catalog_answers(chat: Keyboard) -> None:
    chat.send("hello", ENTER)  # a conversation for /retry, /undo, /branch, /compress to act on
    await chat.shows("You said: hello")
    await chat.idle()
    answers: dict[str, str] = {}
    names = [name for name, _ in chat.app.controller.catalog]
    switching = ("/branch", "/new", "/resume")  # last: the others act on the conversation above
    for name in sorted(names, key=lambda n: (n in switching, n)):
        mark = len(chat.text())
        chat.send(name, ENTER)

        def answered(name: str = name, mark: int = mark) -> bool:
            app = chat.app  # typed and rendered, Enter taken (the input no longer holds it), carried out
            entered = f"❯ {name}" in chat.text()[mark:] and app.input_buffer.text != name
            return entered and not app.controller.working() and app.controller.settled()

        await chat.until(answered, what=f"the answer to {name}")
        answers[name] = chat.text()[mark:]
        chat.app.input_buffer.reset()  # a command that prefilled the input
    assert len(answers) >= 20, sorted(answers)
    broken = {n: a for n, a in answers.items() if "handler failed" in a or "internal error" in a.lower()}
    assert not broken, broken
    assert "{'" not in answers["/retry"] and "sending your last prompt again" in answers["/retry"]
    assert "Started new session" in answers["/new"]
    chat.send("still talking", ENTER)  # right after the last command: it goes to the current session
    await chat.shows("You said: still talking")


async def test_a_prompt_typed_right_after_new_goes_to_the_new_session(chat: Keyboard) -> None:
    chat.send("/new", ENTER, "first words here", ENTER)  # typed before /new has answered
    await chat.shows("You said: first words here")
    shown = chat.text()
    assert shown.index("Started new session") < shown.index("You said: first words here")


async def test_tab_completes_commands_and_model_names(chat: Keyboard) -> None:
    await chat.until(lambda: chat.app.models, what="the model list")
    chat.send("/mo", TAB)
    await chat.until(lambda: chat.app.input_buffer.text == "/model", what="/model completed")
    chat.send(" mock:al", TAB)
    await chat.until(lambda: chat.app.input_buffer.text == "/model mock:alt", what="the model completed")
    chat.send(ENTER)
    await chat.shows("Model switched to mock:alt")


async def test_tab_completes_paths_from_the_chat_folder(chat: Keyboard, work: Path) -> None:
    (work / "src").mkdir()
    (work / "src" / "module_alpha.py").write_text("", encoding="utf-8")
    chat.send("look at ./src/mod", TAB)
    await chat.until(lambda: chat.app.input_buffer.text == "look at ./src/module_alpha.py", what="the path")
    chat.app.input_buffer.reset()
    chat.send("/image ./sr", TAB)
    await chat.until(lambda: chat.app.input_buffer.text == "/image ./src", what="the folder")


async def test_a_big_paste_is_collapsed_but_sent_whole(chat: Keyboard) -> None:
    pasted = "\n".join(f"pasted line {i}" for i in range(40))
    chat.send("look at this: ", bracketed(pasted))
    await chat.until(lambda: "[pasted #1: 40 lines" in chat.app.input_buffer.text, what="the placeholder")
    chat.send(ENTER)
    shown = await chat.shows("pasted line 39")  # the reply echoes the whole text
    assert "❯ look at this: [pasted #1: 40 lines" in shown


async def test_a_pasted_image_path_attaches_the_image(chat: Keyboard, work: Path) -> None:
    image = work / "pixel.png"
    image.write_bytes(_png(2, 3))
    chat.send(bracketed(str(image)))
    await chat.shows("attached pixel.png 2×3")
    assert chat.app.input_buffer.text == ""
    chat.send("/image nowhere.png", ENTER)
    await chat.until(lambda: "✗" in chat.text().partition("/image nowhere.png")[2], what="the error")
    assert "nowhere.png" in chat.text().partition("/image nowhere.png")[2].partition("✗")[2]


async def test_history_is_kept_per_project(scrubbed: Path, work: Path, tmp_path: Path) -> None:
    with create_pipe_input() as pipe:
        first = await start_chat(scrubbed, work, pipe)
        first.send("remember me", ENTER)
        await first.shows("You said: remember me")
        first.app.exit()
        await first.task
    with create_pipe_input() as pipe:
        again = await start_chat(scrubbed, work, pipe)
        again.send(UP)
        await again.until(lambda: again.app.input_buffer.text == "remember me", what="the recalled prompt")
        again.app.exit()
        await again.task
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert history_path(scrubbed, elsewhere) != history_path(scrubbed, work)


async def test_tool_output_is_collapsed_and_expands(chat: Keyboard) -> None:
    chat.send('go [[tool terminal {"command": "seq 1 30"}]]', ENTER)
    shown = await chat.shows("/expand 1")
    collapsed = shown.rpartition("✓ [1] terminal")[2]  # the block written to the scrollback
    assert "  │ 4\n" in collapsed and "more lines · /expand 1" in collapsed and "│ 30" not in collapsed
    mark = len(chat.text())  # the live line showed the latest output line ("30") while it ran
    chat.send("/expand 1", ENTER)
    await chat.until(
        lambda: all(f"  │ {n}\n" in chat.text()[mark:] for n in (5, 29, 30)), what="the whole output"
    )


async def test_a_file_edit_shows_a_coloured_diff(chat: Keyboard, work: Path) -> None:
    (work / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    chat.send('w [[tool write_file {"path": "notes.txt", "content": "alpha\\ngamma\\n"}]]', ENTER)
    shown = await chat.shows("+gamma")
    assert "-beta" in shown and "+++ b/notes.txt" in shown
    raw = chat.recorded.getvalue()
    assert "\x1b[32m  +gamma" in raw and "\x1b[31m  -beta" in raw  # green and red


async def test_background_and_subagents_report_when_they_land(chat: Keyboard) -> None:
    chat.send("/background tally [[tokens 3]]", ENTER)
    await chat.shows("background task bg_")
    await chat.shows("t0 t1 t2")
    chat.send('d [[tool delegate_task {"goal": "sum up [[tokens 4]] [[delay 200]]"}]]', ENTER)
    await chat.until(lambda: chat.app.screen.subagents, what="the subagent's live line")
    shown = await chat.shows("↳ ✓ sum up", timeout=60)
    assert "t0 t1 t2 t3" in shown


def _png(width: int, height: int) -> bytes:
    """Return a tiny valid PNG (black pixels)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x00\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
