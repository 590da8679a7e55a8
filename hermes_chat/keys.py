"""The interactive chat's keys (docs/chat.md#keys).

Enter sends (a line ending in ``\\`` continues); Alt+Enter or Ctrl+J adds a line. Ctrl+C stops
the running turn, clears the input when idle, and leaves when pressed twice within two seconds;
Ctrl+D on an empty input leaves.
Esc Esc sends the input to the running turn as guidance. An open approval takes one key per
choice (o, s, a, d) and nothing else; a clarify question takes a number or a typed answer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, get_common_complete_suffix
from prompt_toolkit.filters import Condition
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys

from hermes_chat.controller import APPROVAL_KEYS

if TYPE_CHECKING:
    from hermes_chat.app import ChatApp

EXIT_WINDOW_S = 2.0


def bindings(app: ChatApp) -> KeyBindings:
    """Return the chat's key bindings."""
    kb = KeyBindings()
    hidden = Condition(app.hidden_input)
    approval = Condition(lambda: app.question is not None and app.question.kind == "approval")
    clarify = Condition(lambda: app.question is not None and app.question.kind == "clarify")
    empty = Condition(lambda: not app.input_buffer.text)
    typing = ~hidden & ~approval

    @kb.add("enter", filter=typing)
    def _enter(event: KeyPressEvent) -> None:
        buffer = app.input_buffer
        buffer.complete_state = None  # a completion picked with Tab or the arrows is already in
        if buffer.document.text_before_cursor.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
            return
        app.accept()

    @kb.add("escape", "enter", filter=typing)
    @kb.add("c-j", filter=typing)
    def _newline(event: KeyPressEvent) -> None:
        app.input_buffer.insert_text("\n")

    @kb.add("enter", filter=hidden)
    def _hidden_enter(event: KeyPressEvent) -> None:
        app.accept_hidden()

    @kb.add("escape", filter=hidden)
    def _hidden_skip(event: KeyPressEvent) -> None:
        app.accept_hidden(skip=True)

    def approve(choice: str) -> None:
        question = app.question
        if question is None:
            return
        offered = question.payload.get("choices") or list(APPROVAL_KEYS.values())
        if choice in offered:
            app.controller.spawn(app.controller.answer(question, choice))

    for key, choice in APPROVAL_KEYS.items():
        kb.add(key, filter=approval)(lambda event, choice=choice: approve(choice))
        kb.add(key.upper(), filter=approval)(lambda event, choice=choice: approve(choice))

    @kb.add(Keys.Any, filter=approval)
    def _swallow(event: KeyPressEvent) -> None:
        """While an approval is open, other keys do nothing (they would type into the input)."""

    def pick(index: int) -> None:
        question = app.question
        choices = question.payload.get("choices") or [] if question is not None else []
        if question is not None and index < len(choices):
            app.controller.spawn(app.controller.answer(question, str(choices[index])))

    for number in range(1, 10):
        kb.add(str(number), filter=clarify & empty)(lambda event, index=number - 1: pick(index))

    @kb.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        now = time.monotonic()
        if now - app.last_interrupt < EXIT_WINDOW_S:
            app.exit()
            return
        app.last_interrupt = now
        if app.screen.busy or app.screen.questions:
            app.screen.notice("interrupting… (Ctrl+C again within 2 s leaves)", "warn")
            app.controller.spawn(app.controller.interrupt())
        elif app.input_buffer.text:
            app.input_buffer.reset()
        else:
            app.screen.notice("press Ctrl+C again within 2 s (or Ctrl+D) to leave")

    @kb.add("c-d", filter=empty & ~hidden)
    def _leave(event: KeyPressEvent) -> None:
        app.exit()

    @kb.add("escape", "escape", filter=typing)
    def _steer(event: KeyPressEvent) -> None:
        text = app.pastes.expand(app.input_buffer.text).strip()
        if not text:
            app.screen.notice("type guidance first: Esc Esc sends it into the running turn")
            return
        if not app.screen.busy:
            app.screen.notice("nothing is running: press Enter to send it as a prompt")
            return
        app.input_buffer.history.append_string(text)
        app.input_buffer.reset()
        app.controller.spawn(app.controller.steer(text))

    @kb.add("tab", filter=typing)
    def _complete(event: KeyPressEvent) -> None:
        buffer = app.input_buffer
        if buffer.complete_state is not None:
            buffer.complete_next()
            return
        # Asked for now, not in the background: a completion still running for the keys typed
        # just before would swallow a background request (prompt_toolkit runs one at a time).
        completer = buffer.completer
        if completer is None:
            return
        found = list(completer.get_completions(buffer.document, CompleteEvent(completion_requested=True)))
        if len(found) == 1:
            buffer.apply_completion(found[0])
        elif common := get_common_complete_suffix(buffer.document, found):
            buffer.insert_text(common)
        elif found:
            buffer.start_completion(select_first=False)

    @kb.add("s-tab", filter=typing)
    def _complete_back(event: KeyPressEvent) -> None:
        if app.input_buffer.complete_state is not None:
            app.input_buffer.complete_previous()

    @kb.add(Keys.BracketedPaste)
    def _paste(event: KeyPressEvent) -> None:
        if app.hidden_input():
            app.secret_buffer.insert_text(event.data.strip())
        else:
            app.paste(event.data)

    @kb.add("c-o", filter=typing)
    def _expand(event: KeyPressEvent) -> None:
        app.controller.expand("")

    return kb
