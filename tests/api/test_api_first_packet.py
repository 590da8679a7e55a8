"""A streamed chat's first write carries the head, the role chunk and the first delta, and leaves as
soon as that delta is there: it never waits for the rest of the upstream read
(plugins/hermes_api_server/chat_stream.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, cast

from hermes_api_server.chat_stream import HEAD_WAIT_S, ChatChunks
from hermes_api_server.model_select import ModelChoice
from hermes_api_server.turns import KEEPALIVE_S
from hermes_core import ReasoningDelta, TextDelta, TitleChanged, TurnCompleted, TurnStarted, UsageUpdated


class Writer:
    """Records the writes a stream makes: ("open" | "raw", text)."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str]] = []

    @property
    def opened(self) -> bool:
        return bool(self.writes)

    async def open(self, first: str = "") -> None:
        self.writes.append(("open", first))

    async def raw(self, text: str) -> None:
        self.writes.append(("raw", text))


class Pump:
    """Hands out scripted batches; ``None`` in the script is a wait that found nothing.

    Records the timeout of each call, so a test sees which waits asked only for the next step.
    """

    def __init__(self, script: list[list[Any] | None]) -> None:
        self.script = script
        self.timeouts: list[float | None] = []
        self.silent: frozenset[type] = frozenset()

    def quiet(self, kinds: frozenset[type]) -> None:
        self.silent = kinds

    async def next(self, timeout: float | None) -> list[Any] | None:
        self.timeouts.append(timeout)
        return self.script.pop(0)


def delta(text: str) -> TextDelta:
    return TextDelta(session_id="s", turn_id="t", segment_id="g", text=text)


def chunks() -> ChatChunks:
    settings = SimpleNamespace(show_reasoning=False, tool_progress_events=False)
    state = cast(Any, SimpleNamespace(settings=settings, kernel=None))
    choice = ModelChoice(
        requested="hermes-agent", requested_raw=None, ref=None, source="default", options=None
    )
    return ChatChunks(state, "chatcmpl-1", 1, choice, "s")


def contents(text: str) -> list[str]:
    return [line for line in text.split("\n\n") if '"content"' in line]


async def test_the_first_delta_leaves_with_the_head_without_waiting_for_the_rest() -> None:
    writer, pump = Writer(), Pump([[delta("t0")], [delta(" t1"), delta(" t2")], []])
    last = await chunks().pump(writer, pump, "m:x", "default", False)  # type: ignore[arg-type]
    assert [kind for kind, _ in writer.writes] == ["open", "raw"]
    first = writer.writes[0][1]
    assert first.index('"role":"assistant"') < first.index('"content":"t0"')
    assert '"content":" t1 t2"' in writer.writes[1][1]  # the rest of the read: one frame, next write
    assert 0.0 not in pump.timeouts  # no wait asked only for "the next loop step"
    assert last == "data: [DONE]\n\n"


async def test_the_head_waits_for_the_first_frame_at_most_the_head_wait() -> None:
    writer, pump = Writer(), Pump([None, [delta("t0")], []])
    await chunks().pump(writer, pump, "m:x", "default", False)  # type: ignore[arg-type]
    assert [kind for kind, _ in writer.writes] == ["open", "raw"]
    assert '"role":"assistant"' in writer.writes[0][1] and not contents(writer.writes[0][1])
    assert '"content":"t0"' in writer.writes[1][1]
    assert 0.0 < pump.timeouts[0] <= HEAD_WAIT_S


async def test_the_role_and_content_frames_are_the_chunks_they_stand_for() -> None:
    """The head's role chunk and a content chunk are spliced into one encoding of the envelope;
    a client parsing them gets exactly the chunks built field by field."""
    writer, pump = Writer(), Pump([[delta('t0 "quoted" é')], []])
    made = chunks()
    await made.pump(writer, pump, "m:x", "default", False)  # type: ignore[arg-type]
    role, content = [json.loads(line[6:]) for line in writer.writes[0][1].split("\n\n") if line]
    envelope = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "hermes-agent"}
    assert role == {
        **envelope,
        "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}],
    }
    assert content == {
        **envelope,
        "choices": [{"index": 0, "delta": {"content": 't0 "quoted" é'}, "finish_reason": None}],
    }


async def test_only_what_the_stream_writes_wakes_it_and_the_keepalive_counts_from_the_last_write() -> None:
    """Bookkeeping events and hidden reasoning are quiet (they come with the next written event),
    and a batch that writes nothing does not restart the keep-alive's 10 s."""
    title = TitleChanged(session_id="s", title="a chat", origin="derived")
    writer, pump = Writer(), Pump([[delta("t0")], [title], None, [delta(" t1")], []])
    await chunks().pump(writer, pump, "m:x", "default", False)  # type: ignore[arg-type]
    assert {TurnStarted, TitleChanged, UsageUpdated, ReasoningDelta} <= pump.silent
    assert not {TextDelta, TurnCompleted} & pump.silent
    assert [kind for kind, _ in writer.writes] == ["open", "raw", "raw"]
    assert writer.writes[1][1] == ": keepalive\n\n"
    after_write, after_nothing, after_keepalive = pump.timeouts[1:4]
    assert after_write <= KEEPALIVE_S and after_nothing < after_write  # not a fresh 10 s
    assert after_keepalive > KEEPALIVE_S - 1
