"""The interactive chat's layout, drawn below the scrollback (:mod:`hermes_chat.app`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prompt_toolkit.filters import Condition
from prompt_toolkit.layout import ConditionalContainer, Float, FloatContainer, HSplit, Layout, Window
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.layout.menus import CompletionsMenu
from prompt_toolkit.layout.processors import PasswordProcessor

from hermes_chat.live import live_fragments, question_fragments, toolbar_fragments

if TYPE_CHECKING:
    from hermes_chat.app import ChatApp


def build_layout(chat: ChatApp) -> tuple[Layout, Window, Window]:
    """Build the chat's layout: the live area, an open question, the input (or the hidden field
    while a password or secret is asked for) and the toolbar, with the completion menu.

    :returns: the layout, the input window and the hidden field's window.
    """
    hidden = Condition(chat.hidden_input)
    live = Window(
        FormattedTextControl(lambda: live_fragments(chat)),
        wrap_lines=True,
        dont_extend_height=True,
        height=Dimension(max=14),
    )
    question = Window(
        FormattedTextControl(lambda: question_fragments(chat)), wrap_lines=True, dont_extend_height=True
    )
    input_window = Window(
        BufferControl(chat.input_buffer),
        height=lambda: _input_height(chat),
        wrap_lines=True,
        dont_extend_height=True,
        get_line_prefix=lambda line, wrap: [("class:prompt", "❯ " if line == 0 and wrap == 0 else "  ")],
    )
    secret_window = Window(
        BufferControl(chat.secret_buffer, input_processors=[PasswordProcessor()]),
        height=1,
        get_line_prefix=lambda line, wrap: [("class:prompt", "🔒 ")],
    )
    toolbar = Window(FormattedTextControl(lambda: toolbar_fragments(chat)), height=1, style="class:toolbar")
    body = HSplit(
        [
            ConditionalContainer(live, Condition(lambda: bool(live_fragments(chat)))),
            ConditionalContainer(question, Condition(lambda: chat.question is not None)),
            ConditionalContainer(secret_window, hidden),
            ConditionalContainer(input_window, ~hidden),
            toolbar,
        ]
    )
    menu = Float(xcursor=True, ycursor=True, content=CompletionsMenu(max_height=8, scroll_offset=1))
    layout = Layout(FloatContainer(body, floats=[menu]), focused_element=input_window)
    return layout, input_window, secret_window


def _input_height(chat: ChatApp) -> Dimension:
    if chat.input_buffer.complete_state is not None:
        return Dimension(min=9, max=16)  # room for the completion menu below the cursor
    return Dimension(min=1, max=12)
