"""A chat stream's deltas written by the turn's own step while the pump waits (``DeltaSink``)."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

from hermes_api_server.chat_stream import ChatChunks
from hermes_api_server.model_select import ModelChoice
from hermes_core import ReasoningDelta, SegmentStarted, TextDelta


class Writer:
    """Records writes: ("open" | "raw" | "now", text); ``now`` ones only while ``accepts``."""

    can_write_now = True

    def __init__(self) -> None:
        self.writes: list[tuple[str, str]] = []
        self.accepts = True

    @property
    def opened(self) -> bool:
        return bool(self.writes)

    async def open(self, first: str = "") -> None:
        self.writes.append(("open", first))

    async def raw(self, text: str) -> None:
        self.writes.append(("raw", text))

    def write_now(self, text: str) -> bool:
        if self.accepts:
            self.writes.append(("now", text))
        return self.accepts


Step = Callable[[Callable[[Any], bool]], list[Any] | None]


class Pump:
    """Runs a scripted step per ``next``: the step may offer events to the sink (as the turn's
    emits would while the pump waits) and returns the batch the wait ends with."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.sink: Callable[[Any], bool] | None = None
        self.sinks: list[object] = []

    def set_sink(self, sink: Callable[[Any], bool] | None) -> bool:
        self.sink = sink
        self.sinks.append(sink)
        return True

    async def next(self, timeout: float | None) -> list[Any] | None:
        assert self.sink is not None
        return self.steps.pop(0)(self.sink)


def delta(text: str, kind: type = TextDelta) -> Any:
    return kind(session_id="s", turn_id="t", segment_id="g", text=text)


def chunks(show_reasoning: bool = False) -> ChatChunks:
    settings = SimpleNamespace(show_reasoning=show_reasoning, tool_progress_events=False)
    state = cast(Any, SimpleNamespace(settings=settings, kernel=None))
    choice = ModelChoice(
        requested="hermes-agent", requested_raw=None, ref=None, source="default", options=None
    )
    return ChatChunks(state, "chatcmpl-1", 1, choice, "s")


def offer(*events: Any, then: list[Any]) -> Step:
    """A wait during which ``events`` are emitted; it ends with the refused ones, then ``then``."""

    def step(sink: Callable[[Any], bool]) -> list[Any] | None:
        return [e for e in events if not sink(e)] + then

    return step


async def test_deltas_reaching_a_waiting_stream_are_written_by_the_sink() -> None:
    writer = Writer()
    stream = chunks()
    # The head is not out yet: the first delta is refused (queued) and read by the pump.
    pump = Pump([offer(delta("t0"), then=[]), offer(delta(" t1"), delta(" t2"), then=[])])
    last = await stream.pump(writer, pump, "m:x", "default", False)  # type: ignore[arg-type]
    kinds = [kind for kind, _ in writer.writes]
    assert kinds == ["open", "now", "now"]
    assert '"content":"t0"' in writer.writes[0][1]
    assert '"content":" t1"' in writer.writes[1][1] and '"content":" t2"' in writer.writes[2][1]
    # The sink's frames are the pump's frames, byte for byte.
    assert writer.writes[1][1] == stream.delta_frame(" t1", None)
    assert stream.answered == "t0 t1 t2"
    assert pump.sinks[-1] is None  # removed before the pump returned
    assert last == "data: [DONE]\n\n"


async def test_a_delta_the_writer_cannot_take_now_goes_through_the_pump_in_order() -> None:
    writer = Writer()
    stream = chunks()

    def backed_up(sink: Callable[[Any], bool]) -> list[Any] | None:
        writer.accepts = False  # e.g. the transport's buffer is filling
        refused = [e for e in (delta(" t1"), SegmentStarted(session_id="s", segment_id="g2")) if not sink(e)]
        writer.accepts = True
        return refused

    pump = Pump([lambda sink: [delta("t0")], backed_up, offer(delta(" t2"), then=[])])
    await stream.pump(writer, pump, "m:x", "default", False)  # type: ignore[arg-type]
    assert [kind for kind, _ in writer.writes] == ["open", "raw", "now"]
    assert '"content":" t1"' in writer.writes[1][1] and '" t2"' in writer.writes[2][1]
    assert stream.answered == "t0 t1 t2"


async def test_reasoning_reaching_a_waiting_stream_is_written_or_dropped_as_the_pump_would() -> None:
    for show in (True, False):
        writer = Writer()
        pump = Pump([lambda sink: [delta("t0")], offer(delta("think", ReasoningDelta), then=[])])
        await chunks(show).pump(writer, pump, "m:x", "default", False)  # type: ignore[arg-type]
        now = [text for kind, text in writer.writes if kind == "now"]
        if show:
            assert len(now) == 1 and '"reasoning_content":"think"' in now[0]
        else:
            assert now == []
