"""The event log's encoding: every event type comes back as the record it was, and the few
documented differences (delta runs, tails, images, deadlines) hold
(docs/reference/core.md#what-the-log-holds)."""

from __future__ import annotations

import dataclasses
import time
import zlib

import pytest

from hermes_core import (
    BackgroundCompleted,
    Event,
    FileChange,
    ImagePart,
    QuestionClosed,
    QuestionRequested,
    ReasoningDelta,
    Retrying,
    SegmentStarted,
    SessionChanged,
    SessionProblem,
    SteerDelivered,
    SubagentEvent,
    TextDelta,
    TitleChanged,
    TodoItem,
    ToolAnnounced,
    ToolCompleted,
    ToolDecision,
    ToolExecuting,
    ToolProgress,
    TurnCompleted,
    TurnOutcome,
    TurnStarted,
    Usage,
    UsageUpdated,
)
from hermes_core import events as events_module
from hermes_core.event_log.codec import ChunkHeader, decode_events, encode_events, make_chunk, split_chunk

SID = "s1"
USAGE = Usage(
    input=10,
    output=5,
    reasoning=2,
    total=15,
    calls=1,
    estimated=True,
    context_used=15,
    context_max=100,
    cost_usd=0.5,
)
CHANGE = FileChange(path="/w/a.txt", old_text=None, new_text="new\n")
BASE = {"session_id": SID, "turn_id": "t1", "ts": 1700000000.123456}


def every_event() -> list[Event]:
    """One event of each type, with every field away from its default."""
    return [
        TurnStarted(
            **BASE, item_ids=("i1", "i2"), user_row_id=7, queued=True, model="p:m", model_source="flag"
        ),
        SegmentStarted(**BASE, segment_id="seg1"),
        Retrying(**BASE, attempt=2, wait_s=1.5, kind="rate_limit"),
        ToolAnnounced(
            **BASE,
            call_id="c1",
            name="write_file",
            kind="edit",
            title="Write a.txt",
            args_redacted={"path": "a.txt", "nested": {"list": [1, "two", None]}},
            preview="a.txt",
            paths=("/w/a.txt",),
            proposed_change=CHANGE,
        ),
        ToolDecision(
            **BASE, call_id="c1", decision="ask", sources=(("policy", "ask", "why"), ("profile", "allow", ""))
        ),
        QuestionClosed(
            **BASE,
            request_id="q1",
            kind="approval",
            reason="answered",
            choice="once",
            call_id="c1",
            task_id="bg_1",
        ),
        ToolExecuting(**BASE, call_id="c1"),
        ToolCompleted(
            **BASE,
            call_id="c1",
            name="write_file",
            result_text="done ☃",
            is_error=True,
            duration_s=0.25,
            file_change=CHANGE,
            todos=(TodoItem(id="1", content="x", status="completed", priority="high"),),
            images=(ImagePart(url="https://example.com/a.png", mime="image/png"),),
        ),
        SteerDelivered(**BASE, chars=12),
        UsageUpdated(**BASE, usage=USAGE, turn_usage=Usage(input=1)),
        TitleChanged(**BASE, title="A title", origin="refined"),
        SessionChanged(**BASE, fields=("status", "title")),
        TurnCompleted(
            **BASE,
            outcome=TurnOutcome(
                status="error",
                reason="provider_error",
                error_kind="rate_limit",
                partial=True,
                cap=(3, 4),
                retryable=True,
                layer="provider",
                retry_after=2.0,
                message="slow down",
            ),
            text="answer",
            reasoning="thought",
            usage=USAGE,
            turn_usage=USAGE,
            pending_steer="later",
            warnings=("images_dropped",),
            user_row_id=7,
            assistant_row_id=8,
        ),
        SessionProblem(**BASE, code="storage", message="disk full"),
        BackgroundCompleted(**BASE, task_id="bg_1", text="result", status="error"),
        SubagentEvent(
            **BASE,
            kind="complete",
            subagent_id="child",
            parent_id=SID,
            payload={"summary": "did it", "tool_calls": 3},
            depth=2,
            goal="sum up",
            task_index=1,
            task_count=3,
            model="p:m",
            status="completed",
            usage=USAGE,
            delegation_id="d1",
        ),
    ]


def roundtrip(events: list[Event], first_seq: int = 5) -> list[Event]:
    chunk = make_chunk(first_seq, first_seq + len(events) - 1, ChunkHeader(reserve=99), encode_events(events))
    header, body = split_chunk(chunk.data)
    assert header == ChunkHeader(reserve=99)
    return decode_events(body, SID, first_seq, redact=lambda text: text.replace("secret", "***"))


def test_every_event_type_comes_back_equal_and_numbered() -> None:
    events = every_event()
    kinds = {type(e) for e in events} | {TextDelta, ReasoningDelta, ToolProgress, QuestionRequested}
    every = {c for c in vars(events_module).values() if isinstance(c, type) and issubclass(c, Event)}
    assert kinds == every - {Event}, "a new event type needs a case here"
    back = roundtrip(events)
    assert back == events
    assert [e.seq for e in back] == list(range(5, 5 + len(events)))


def test_defaults_are_left_out_and_come_back() -> None:
    plain = [
        TurnCompleted(
            session_id=SID,
            outcome=TurnOutcome("complete", "stop"),
            text="",
            reasoning="",
            usage=Usage(),
            turn_usage=Usage(),
        )
    ]
    assert roundtrip(plain) == plain
    stored = zlib.decompress(encode_events(plain))
    assert b"pending_steer" not in stored and b"session_id" not in stored


def test_delta_runs_come_back_as_the_same_deltas() -> None:
    start = 1700000000.0
    deltas: list[Event] = [
        TextDelta(session_id=SID, turn_id="t1", segment_id="a", text=word, ts=start + n * 0.0123)
        for n, word in enumerate(["Hel", "lo", "", " wörld", "!"])
    ]
    deltas.append(ReasoningDelta(session_id=SID, turn_id="t1", segment_id="a", text="hm", ts=start + 1))
    deltas.append(TextDelta(session_id=SID, turn_id="t1", segment_id="b", text="next", ts=start + 2))
    back = roundtrip(deltas)
    assert (
        len(zlib.decompress(encode_events(deltas)).split(b'"type"')) == 4
    )  # one run, then two single deltas
    assert [(type(e), e.segment_id, e.text) for e in back] == [
        (type(e), e.segment_id, e.text) for e in deltas
    ]
    assert [e.seq for e in back] == list(range(5, 5 + len(deltas)))
    assert all(abs(a.ts - b.ts) < 0.001 for a, b in zip(back, deltas, strict=True))


def test_tool_progress_tails_are_rebuilt_and_redacted() -> None:
    chunks = ["line one\n", "my secret\n", "end"]
    events: list[Event] = [
        ToolProgress(**BASE, call_id="c1", chunk=c, tail="".join(chunks[: n + 1]))
        for n, c in enumerate(chunks)
    ]
    back = roundtrip(events)
    assert [e.chunk for e in back] == chunks  # type: ignore[attr-defined]
    assert back[-1].tail == "line one\nmy ***\nend"  # type: ignore[attr-defined]


def test_images_keep_their_type_not_their_bytes() -> None:
    done = ToolCompleted(
        **BASE,
        call_id="c",
        name="screenshot",
        result_text="",
        is_error=False,
        duration_s=0.1,
        images=(ImagePart(data=b"\x89PNG" * 1000, mime="image/png"),),
    )
    [back] = roundtrip([done])
    assert back.images == (ImagePart(data=None, mime="image/png"),)  # type: ignore[attr-defined]


def test_a_question_deadline_moves_to_the_readers_clock() -> None:
    asked = QuestionRequested(
        **BASE,
        request_id="q",
        kind="clarify",
        timeout_s=300,
        deadline_monotonic=time.monotonic() + 120,
        question="why?",
    )
    [back] = roundtrip([asked])
    assert isinstance(back, QuestionRequested) and back.question == "why?"
    assert abs((back.deadline_monotonic - time.monotonic()) - 120) < 1
    assert dataclasses.replace(back, deadline_monotonic=asked.deadline_monotonic) == asked


def test_data_of_another_format_is_refused() -> None:
    with pytest.raises(ValueError, match="format"):
        split_chunk(b"\x09{}\nxx")


def test_a_small_body_is_packed_with_a_window_its_size_and_a_big_one_alike() -> None:
    """A short turn's few hundred bytes do not pay for zlib's 32 KiB window set-up (issue #30),
    and every body still reads back with plain ``zlib.decompress``."""
    small: list[Event] = [TextDelta(session_id=SID, turn_id="t1", segment_id="a", text="hi")]
    body = encode_events(small)
    window = 1 << ((body[0] >> 4) + 8)  # the zlib header's CINFO
    assert window <= 1024
    assert roundtrip(small)[0].text == "hi"
    words = " ".join(f"word{n}" for n in range(20_000))
    big: list[Event] = [TextDelta(session_id=SID, turn_id="t1", segment_id="a", text=words)]
    body = encode_events(big)
    assert 1 << ((body[0] >> 4) + 8) == 32768
    assert roundtrip(big)[0].text == words


def test_the_stored_text_is_what_the_json_module_writes() -> None:
    """The body's encoder, made once, writes byte for byte what ``json.dumps`` with the log's
    options writes (non-ASCII kept, floats as their repr)."""
    import json

    odd = 'caf\u00e9 \u20ac \U0001f600 \x00\n"\\'
    events = [*every_event(), TextDelta(session_id=SID, turn_id="t1", segment_id="z", text=odd, ts=1e-7)]
    stored = zlib.decompress(encode_events(events)).decode()
    assert stored == json.dumps(json.loads(stored), ensure_ascii=False, separators=(",", ":"))
    assert odd in json.loads(stored)[-1].values()


def test_a_provisional_body_is_stored_uncompressed_when_small() -> None:
    """Level 1 (the provisional chunks of a streaming session) stores a small body as it is,
    in a zlib stream any reader takes; a bigger one is still deflated."""
    from hermes_core.event_log.codec import STORE_BELOW

    small: list[Event] = [TextDelta(session_id=SID, turn_id="t1", segment_id="a", text="h\u00e9")]
    body = encode_events(small, level=1)
    assert zlib.decompress(body) == zlib.decompress(encode_events(small))
    assert zlib.decompress(encode_events(small)) in body  # the text itself, not deflated
    assert decode_events(body, SID, 3) == [dataclasses.replace(small[0], seq=3)]
    words = " ".join(f"word{n % 50}" for n in range(STORE_BELOW))
    big: list[Event] = [TextDelta(session_id=SID, turn_id="t1", segment_id="a", text=words)]
    body = encode_events(big, level=1)
    assert len(body) < len(words) // 4
    assert decode_events(body, SID, 1)[0].text == words
