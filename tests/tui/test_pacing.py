"""Delta pacing over real stdio: a long reply streams in fewer, larger ``message.delta`` frames,
with every character in order (docs/reference/tui-gateway.md#settings, ``stream_interval_s`` and
``stream_interval_long_s``).

A terminal client redraws its live tail for every delta; the Ink TUI spends ~50-200 ms per
redraw of a 16,000-character tail, so a 33 ms cadence left no time to echo keystrokes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from hermes_mock.replies import tokens_text
from tests.timing import scaled
from tests.tui.client import TuiProcess, write_config

# The gateway's defaults (plugins/hermes_tui_gateway/settings.py) and its ramp length.
SHORT_S = 0.033
LONG_S = 1.0
LONG_REPLY_CHARS = 16_000


def _window(streamed: int, short: float = SHORT_S, long: float = LONG_S) -> float:
    return short + (long - short) * min(1.0, streamed / LONG_REPLY_CHARS)


def _stamped(tui: TuiProcess) -> list[tuple[float, dict[str, Any]]]:
    """Record the arrival time of every later frame of ``tui``."""
    stamps: list[tuple[float, dict[str, Any]]] = []
    add: Callable[[dict[str, Any]], None] = tui.col.add

    def stamp(frame: dict[str, Any]) -> None:
        stamps.append((time.monotonic(), frame))
        add(frame)

    tui.col.add = stamp  # type: ignore[method-assign]
    return stamps


def _deltas(stamps: list[tuple[float, dict[str, Any]]], sid: str) -> list[tuple[float, str]]:
    return [
        (t, f["params"]["payload"]["text"])
        for t, f in stamps
        if f.get("method") == "event"
        and f["params"]["session_id"] == sid
        and f["params"]["type"] == "message.delta"
    ]


def test_a_long_reply_streams_whole_in_order_in_widening_frames(
    spawn: Callable[..., TuiProcess],
) -> None:
    """3,000 tokens (~17,000 characters) over a few seconds: the deltas join to exactly the final
    text, and the frames come no faster than the widening window allows. With the fixed 33 ms
    window of before, ~100 frames arrived and their windows summed to far more than the stream
    lasted."""
    tui = spawn()
    tui.wait_event("", "gateway.ready", timeout=scaled(20))
    sid = tui.create()
    stamps = _stamped(tui)
    tui.call("prompt.submit", session_id=sid, text="go [[tokens 3000]] [[delay 1]]")
    done = tui.wait_complete(sid, timeout=scaled(60))
    assert done["status"] == "complete"
    deltas = _deltas(stamps, sid)
    assert "".join(text for _, text in deltas) == done["text"] == tokens_text(3000)
    seqs = [f["params"]["seq"] for _, f in stamps if f.get("method") == "event" and "seq" in f["params"]]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    # Frame k+1 is armed after frame k went out, with the window for at least what had streamed
    # through frame k; so the windows of all but the last two frames fit in the time between
    # the first and the next-to-last (the last may be flushed early by message.complete).
    streamed = 0
    owed = 0.0
    for _, text in deltas[:-2]:
        streamed += len(text)
        owed += _window(streamed)
    span = deltas[-2][0] - deltas[0][0]
    assert owed <= span + scaled(0.5), (len(deltas), owed, span)
    # and the reply did not arrive in one lump: the TUI still sees it grow.
    assert len(deltas) >= 5


def test_a_fixed_window_is_configurable(home: Any, spawn: Callable[..., TuiProcess]) -> None:
    """``stream_interval_long_s`` equal to ``stream_interval_s`` keeps one window all along: the
    same reply then takes many more frames, still whole and in order."""
    write_config(
        home, 'model = "mock:echo"\n[tui]\nstream_interval_s = 0.05\nstream_interval_long_s = 0.05\n'
    )
    tui = spawn()
    tui.wait_event("", "gateway.ready", timeout=scaled(20))
    sid = tui.create()
    stamps = _stamped(tui)
    tui.call("prompt.submit", session_id=sid, text="go [[tokens 3000]] [[delay 1]]")
    done = tui.wait_complete(sid, timeout=scaled(60))
    deltas = _deltas(stamps, sid)
    assert "".join(text for _, text in deltas) == done["text"] == tokens_text(3000)
    span = deltas[-1][0] - deltas[0][0]
    # 50 ms apart at most 1/0.05 a second (plus the flush at the end), and no wider pacing.
    assert len(deltas) <= span / 0.05 + 3
    assert len(deltas) >= min(20, span / scaled(0.2))
