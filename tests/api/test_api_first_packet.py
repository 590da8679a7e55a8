"""A streamed chat's first write carries the head, the role chunk and every delta the same upstream
read yields, even when the core hands the first delta over a loop step ahead of the rest; it never
waits longer than that step (plugins/hermes_api_server/chat_stream.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from hermes_api_server.chat_stream import ChatChunks
from hermes_api_server.model_select import ModelChoice
from hermes_core import TextDelta


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


async def test_the_rest_of_the_first_read_leaves_with_the_head() -> None:
    writer, pump = Writer(), Pump([[delta("t0")], [delta(" t1"), delta(" t2")], []])
    last = await chunks().pump(writer, pump, "m:x", "default", False)  # type: ignore[arg-type]
    assert [kind for kind, _ in writer.writes] == ["open"]  # one write, not head+t0 then the rest
    first = writer.writes[0][1]
    assert (
        first.index('"role":"assistant"') < first.index('"content":"t0"') < first.index('"content":" t1 t2"')
    )
    assert pump.timeouts[1] == 0.0  # the held frames waited for the next loop step only
    assert last == "data: [DONE]\n\n"


async def test_the_first_frames_leave_after_one_step_when_nothing_follows() -> None:
    writer, pump = Writer(), Pump([[delta("t0")], None, [delta(" t1")], []])
    await chunks().pump(writer, pump, "m:x", "default", False)  # type: ignore[arg-type]
    assert [kind for kind, _ in writer.writes] == ["open", "raw"]
    assert contents(writer.writes[0][1]) and '"content":"t0"' in writer.writes[0][1]
    assert '"content":" t1"' in writer.writes[1][1]  # later deltas are not held at all
    assert pump.timeouts[1] == 0.0 and pump.timeouts[2] != 0.0
