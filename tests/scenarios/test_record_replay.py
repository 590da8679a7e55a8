"""Record a real provider's stream chunk by chunk, and replay it with the mock, identically.

The upstream is a fake OpenAI (or Anthropic) API on loopback that checks what it is sent; the
recording is then replayed by ``mock:replay:DIR`` and must give the same events and the same
text; the recording keeps the upstream's chunk boundaries. Deltas that reach the turn together are
merged into one event (docs/reference/core.md#delta-coalescing), which depends on how the bytes
arrived, so the transcripts are compared with runs of deltas joined.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hermes_core.scenarios import read_recording
from hermes_core.scenarios.transcript import run_prompts
from tests.cli.cli_helpers import HERMES, clean_env
from tests.providers.upstream_fakes import OPENAI_DONE, FakeUpstream
from tests.providers.vendors import ANTHROPIC, OPENAI, delta, usage
from tests.providers.vendors import text_reply as anthropic_text

PROMPTS = ["Say hello", "Check the date"]


def _openai_streams() -> list[list[bytes]]:
    """Turn 1: reasoning and text in uneven pieces. Turn 2: a tool call, then text."""
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": ""}}
    return [
        [
            delta(role="assistant", reasoning_content="Greet "),
            delta(reasoning_content="them."),
            delta(content="Hel"),
            delta(content="lo, "),
            delta(content="wor"),
            delta(content="ld!"),
            delta(finish_reason="stop"),
            usage(12, 4),
            OPENAI_DONE,
        ],
        [
            delta(role="assistant", tool_calls=[call]),
            delta(tool_calls=[{"index": 0, "function": {"arguments": '{"command": '}}]),
            delta(tool_calls=[{"index": 0, "function": {"arguments": '"echo recorded"}'}}]),
            delta(finish_reason="tool_calls"),
            usage(20, 6),
            OPENAI_DONE,
        ],
        [
            delta(content="It printed "),
            delta(content="recorded."),
            delta(finish_reason="stop"),
            usage(30, 3),
            OPENAI_DONE,
        ],
    ]


def _joined(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The transcript with each run of deltas of one kind and segment as one delta."""
    out: list[dict[str, Any]] = []
    for line in lines:
        last = out[-1] if out else None
        if (
            last is not None
            and line["event"] in ("TextDelta", "ReasoningDelta")
            and last["event"] == line["event"]
            and last.get("segment_id") == line.get("segment_id")
        ):
            out[-1] = {**last, "text": last["text"] + line["text"]}
        else:
            out.append(line)
    return out


def _deltas(lines: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (line["event"], line["text"])
        for line in _joined(lines)
        if line["event"] in ("TextDelta", "ReasoningDelta")
    ]


def _without_model(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The transcript (deltas joined, no seq) without what names the model: its reference and
    its context window (which comes from the provider's model list, not from the stream)."""

    def drop(value: Any) -> Any:
        if isinstance(value, dict):
            # seq counts the events, so it follows how many deltas were merged
            return {k: drop(v) for k, v in value.items() if k not in ("model", "context_max", "seq")}
        if isinstance(value, list):
            return [drop(v) for v in value]
        return value

    return [drop(line) for line in _joined(lines)]


async def test_a_recorded_openai_session_replays_identically(tmp_path: Path) -> None:
    record = tmp_path / "rec"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with FakeUpstream() as up:
        up.replies(OPENAI.chat_path, _openai_streams())
        real = await run_prompts(
            {
                "model": f"openai:{OPENAI.model}",
                "providers": {"openai": {"api_key": OPENAI.key, "base_url": OPENAI.root(up.url)}},
                "titles": {"refine": False},
                "record_dir": str(record),
            },
            PROMPTS,
            workspace=workspace,
        )
        sent = [r for r in up.requests if r.path == OPENAI.chat_path]
    # The fake saw exactly what the provider sends: the key as a bearer token, the model, a stream.
    assert len(sent) == 3
    assert sent[0].headers["Authorization"] == f"Bearer {OPENAI.key}"
    assert sent[0].body["model"] == OPENAI.model and sent[0].body["stream"] is True
    assert sent[0].body["messages"][-1] == {"role": "user", "content": "Say hello"}

    files = sorted(p.name for p in record.iterdir())
    assert files == ["0001.jsonl", "0002.jsonl", "0003.jsonl"]
    everything = "".join(p.read_text(encoding="utf-8") for p in record.iterdir())
    assert OPENAI.key not in everything and "Authorization" not in everything
    calls = read_recording(record)
    assert [c.header["provider"] for c in calls] == ["openai"] * 3
    kinds = [type(chunk).__name__ for _, chunk in calls[0].chunks]
    assert kinds[:6] == ["ReasoningChunk"] * 2 + ["TextChunk"] * 4
    assert {"FinishChunk", "UsageChunk"} == set(kinds[6:])
    offsets = [t for t, _ in calls[0].chunks]
    assert offsets == sorted(offsets)

    replay_ws = tmp_path / "ws2"
    replay_ws.mkdir()
    replayed = await run_prompts(
        {"model": f"mock:replay:{record}", "titles": {"refine": False}}, PROMPTS, workspace=replay_ws
    )
    assert _deltas(replayed) == _deltas(real)
    assert [chunk.text for _, chunk in calls[0].chunks[:6]] == [
        "Greet ",
        "them.",
        "Hel",
        "lo, ",
        "wor",
        "ld!",
    ]
    assert _deltas(real)[:2] == [("ReasoningDelta", "Greet them."), ("TextDelta", "Hello, world!")]
    assert _without_model(replayed) == _without_model(real)
    done = [line for line in replayed if line["event"] == "TurnCompleted"]
    assert [d["text"] for d in done] == ["Hello, world!", "It printed recorded."]


async def test_a_recorded_anthropic_session_replays_identically(tmp_path: Path) -> None:
    record = tmp_path / "rec"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with FakeUpstream() as up:
        up.replies(ANTHROPIC.chat_path, [anthropic_text("Bon", "jour", " à ", "vous")])
        real = await run_prompts(
            {
                "model": f"anthropic:{ANTHROPIC.model}",
                "providers": {"anthropic": {"api_key": ANTHROPIC.key, "base_url": ANTHROPIC.root(up.url)}},
                "titles": {"refine": False},
                "record_dir": str(record),
            },
            ["Greet me"],
            workspace=workspace,
        )
        assert up.last().headers["x-api-key"] == ANTHROPIC.key
    assert ANTHROPIC.key not in "".join(p.read_text(encoding="utf-8") for p in record.iterdir())
    replayed = await run_prompts(
        {"model": f"mock:replay:{record}", "titles": {"refine": False}}, ["Greet me"], workspace=workspace
    )
    assert _deltas(replayed) == _deltas(real) == [("TextDelta", "Bonjour à vous")]
    assert [chunk.text for _, chunk in read_recording(record)[0].chunks[:4]] == ["Bon", "jour", " à ", "vous"]
    assert _without_model(replayed) == _without_model(real)


async def test_a_secret_the_upstream_streams_back_is_redacted_in_the_recording(tmp_path: Path) -> None:
    record = tmp_path / "rec"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    leaked = [delta(content=f"your key is {OPENAI.key}"), delta(finish_reason="stop"), OPENAI_DONE]
    async with FakeUpstream() as up:
        up.replies(OPENAI.chat_path, [leaked])
        await run_prompts(
            {
                "model": f"openai:{OPENAI.model}",
                "providers": {"openai": {"api_key": OPENAI.key, "base_url": OPENAI.root(up.url)}},
                "titles": {"refine": False},
                "record_dir": str(record),
            },
            ["What is my key?"],
            workspace=workspace,
        )
    text = (record / "0001.jsonl").read_text(encoding="utf-8")
    assert OPENAI.key not in text
    assert "your key is [REDACTED]" in text


def test_the_record_flag_records_and_replay_prints_the_same_reply(tmp_path: Path, home: Path) -> None:
    """``hermes --record DIR run`` against the fake, then ``hermes run --model mock:replay:DIR``."""
    import asyncio
    import threading

    record = tmp_path / "rec"
    ready = threading.Event()
    stop = threading.Event()
    url: list[str] = []

    async def serve() -> None:
        async with FakeUpstream() as up:
            up.replies(OPENAI.chat_path, [_openai_streams()[0]])
            url.append(up.url)
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.02)

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    try:
        assert ready.wait(30)
        (home / "config.toml").write_text(
            f'[providers.openai]\napi_key = "{OPENAI.key}"\nbase_url = "{url[0]}/v1"\n'
            "[titles]\nrefine = false\n",
            encoding="utf-8",
        )
        env = clean_env(home)
        first = subprocess.run(
            [HERMES, "--record", str(record), "run", "--model", f"openai:{OPENAI.model}", "Say hello"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        stop.set()
        thread.join(10)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "Hello, world!\n"
    assert [p.name for p in sorted(record.iterdir())] == ["0001.jsonl"]
    header = json.loads((record / "0001.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert (header["provider"], header["model"], header["purpose"]) == ("openai", OPENAI.model, "turn")
    second = subprocess.run(
        [HERMES, "run", "--model", f"mock:replay:{record}", "Say hello"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout


@pytest.mark.parametrize("content", ["not json\n", '{"format": "other"}\n'])
def test_a_directory_that_is_not_a_recording_is_refused(tmp_path: Path, content: str) -> None:
    (tmp_path / "0001.jsonl").write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=r"0001\.jsonl:1: not a hermes-recording/1 file"):
        read_recording(tmp_path)
