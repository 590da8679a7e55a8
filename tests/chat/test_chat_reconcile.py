"""What the chat shows after the gateway lost its place and the session was resumed from storage.

A gateway killed mid-reply may have sent more of the reply than it stored: the screen already holds
the stored part and more, so nothing may be shown twice; the reply is marked cut off instead.
"""

from __future__ import annotations

import io
from typing import Any

from hermes_chat.plain import PlainOutput
from hermes_chat.render import PlainPainter
from hermes_chat.screen import Screen


def streamed_screen(*deltas: str) -> tuple[Screen, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    screen = Screen(PlainPainter(), PlainOutput(out, err), lambda: "s1", live=False)
    screen.event("s1", "message.start", {"user_row_id": 1})
    for text in deltas:
        screen.event("s1", "message.delta", {"text": text})
    return screen, out, err


def snapshot(reply: str) -> dict[str, Any]:
    return {
        "info": {"running": False},
        "messages": [
            {"row_id": 1, "role": "user", "text": "count"},
            {"row_id": 2, "role": "assistant", "text": reply, "cut_off": "interrupted"},
        ],
    }


def test_a_stored_reply_shorter_than_what_was_shown_is_not_shown_again() -> None:
    screen, out, err = streamed_screen("t0 t1 ", "t2 t3 ", "t4 ")
    screen.rebuilt(snapshot("t0 t1 t2 "))
    assert out.getvalue().split() == ["t0", "t1", "t2", "t3", "t4"]
    assert "cut off" in err.getvalue()


def test_a_stored_reply_longer_than_what_was_shown_shows_only_the_rest() -> None:
    screen, out, _err = streamed_screen("t0 t1 ")
    screen.rebuilt(snapshot("t0 t1 t2 t3 "))
    assert out.getvalue().split() == ["t0", "t1", "t2", "t3"]


def test_a_stored_reply_that_differs_is_shown_whole_after_a_cut_off_mark() -> None:
    screen, out, err = streamed_screen("t0 t1 ")
    screen.rebuilt(snapshot("another reply"))
    assert out.getvalue().split() == ["t0", "t1", "another", "reply"]
    assert "cut off" in err.getvalue()
