"""The pure parts of chat sessions and streams: history keys, chat ids, task prompts, failure mapping and
progress frames (docs/reference/api-server.md#chat-sessions, #chat-stream)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_api_server.chat_index import history_key, new_session_id, turn_points
from hermes_api_server.chat_meta import provider_failure
from hermes_api_server.chat_progress import ProgressFrames
from hermes_api_server.chat_session import frontend_session_id, is_meta_request
from hermes_api_server.chunk_models import ChunkHead
from hermes_core import ProviderError, QuestionClosed, ToolAnnounced, ToolCompleted, ToolDecision
from hermes_core.testing import make_kernel

P1, P2 = "principal:" + "1" * 32, "principal:" + "2" * 32


def test_history_keys_follow_what_reconcile_compares() -> None:
    said = [("user", "hi"), ("assistant", "Hello! How can I help?")]
    base = history_key(None, said)
    assert len(base) == 32 and base == history_key(None, [tuple(p) for p in said])
    # What reconcile treats as equal: whitespace runs, and empty messages it has nothing to match.
    spaced = [("user", " hi "), ("assistant", ""), ("assistant", "Hello!\n\n  How can I help?")]
    spaced = [(role, " ".join(text.split())) for role, text in spaced]
    assert history_key(None, spaced) == base
    others = {
        history_key("user-a", said),
        history_key("user-b", said),
        history_key(None, [("user", "hi"), ("assistant", "Hello! How can I help")]),
        history_key(None, [("assistant", "hi"), ("user", "Hello! How can I help?")]),
        history_key(None, [("user", "hi\nHello! How can I help?")]),
        history_key(None, said[:1]),
    }
    assert base not in others and len(others) == 6


def test_turn_points_are_the_ends_of_answered_turns() -> None:
    pairs = [("user", "a"), ("assistant", "1"), ("assistant", "2"), ("user", "b"), ("user", "c")]
    assert turn_points(pairs) == [pairs[:3]]
    assert turn_points([*pairs, ("assistant", "3")]) == [pairs[:3], [*pairs, ("assistant", "3")]]
    assert turn_points([("user", "a")]) == []
    assert new_session_id() != new_session_id()


def test_frontend_ids_are_per_principal_user_and_chat() -> None:
    one = frontend_session_id("chat-1", P1, "user-a")
    assert one.startswith("api-chat-") and one == frontend_session_id("chat-1", P1, "user-a")
    others = {
        frontend_session_id("chat-2", P1, "user-a"),
        frontend_session_id("chat-1", P2, "user-a"),
        frontend_session_id("chat-1", P1, "user-b"),
        frontend_session_id("chat-1", P1),
    }
    assert one not in others and len(others) == 4


@pytest.mark.parametrize(
    ("text", "meta"),
    [
        ("### Task:\nGenerate a concise, 3-5 word title", True),
        ("  \n### Task:\nSuggest 3-5 relevant follow-up questions", True),
        ("Please do ### Task: later", False),
        ("### Tasks for today", False),
    ],
)
def test_task_prompts_are_recognised_by_their_opening(text: str, meta: bool) -> None:
    assert is_meta_request(text) is meta


@pytest.mark.parametrize(
    ("error", "status", "retry_after"),
    [
        (ProviderError("rate_limit", "slow", retryable=True, retry_after=2.5), 429, "3"),
        (ProviderError("rate_limit", "quota", retryable=False), 502, None),
        (ProviderError("upstream", "5xx", retryable=True), 503, "1"),
        (ProviderError("network", "timed out"), 503, "1"),
        (ProviderError("auth", "bad key"), 502, None),
        (ProviderError("upstream", "400"), 502, None),
    ],
)
def test_provider_failures_map_like_turn_failures(
    error: ProviderError, status: int, retry_after: str | None
) -> None:
    mapped = provider_failure(error, str(error))
    assert (mapped.status, mapped.code, mapped.headers.get("Retry-After")) == (
        status,
        "provider_error",
        retry_after,
    )


HEAD: ChunkHead = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "m"}


def _data(frame: str | None) -> dict[str, Any]:
    assert frame is not None and frame.startswith("event: hermes.tool.progress\ndata: ")
    value: dict[str, Any] = json.loads(frame.split("data: ", 1)[1])
    return value


def _announce(call_id: str, preview: str, name: str = "terminal") -> ToolAnnounced:
    return ToolAnnounced(
        session_id="s", turn_id="t", call_id=call_id, name=name, kind="execute", title=name,
        args_redacted={}, preview=preview, paths=(),
    )  # fmt: skip


def _complete(call_id: str, *, failed: bool = False, name: str = "terminal") -> ToolCompleted:
    return ToolCompleted(
        session_id="s",
        turn_id="t",
        call_id=call_id,
        name=name,
        result_text="",
        is_error=failed,
        duration_s=0.25,
    )


def test_progress_frames_are_chunks_with_one_empty_choice_and_a_status() -> None:
    frames = ProgressFrames(make_kernel(entry_points=["mock", "tools"]), HEAD)
    running = _data(frames.frame(_announce("tc_1", "Run: ls")))
    assert running["choices"] == [{"index": 0, "delta": {}, "finish_reason": None}]
    assert (running["tool"], running["toolCallId"], running["status"]) == ("terminal", "tc_1", "running")
    assert running["event"] == {"type": "status", "data": {"description": "💻 Run: ls", "done": False}}
    done = _data(frames.frame(_complete("tc_1")))
    assert done["event"]["data"] == {"description": "💻 Run: ls — done in 0.2 s", "done": True}
    assert done["failed"] is False and "denied" not in done and "error" not in done


def test_denied_and_failed_calls_say_so_and_hidden_tools_show_nothing() -> None:
    frames = ProgressFrames(make_kernel(entry_points=["mock", "tools"]), HEAD)
    frames.frame(_announce("tc_2", "Run: sudo reboot"))
    frames.note(QuestionClosed(session_id="s", turn_id="t", request_id="q", kind="approval",
                               reason="no_answerer", call_id="tc_2"))  # fmt: skip
    denied = _data(frames.frame(_complete("tc_2", failed=True)))
    assert denied["denied"] is True and denied["event"]["data"]["description"].endswith("— denied")
    frames.frame(_announce("tc_3", "Run: rm -rf /"))
    frames.note(ToolDecision(session_id="s", turn_id="t", call_id="tc_3", decision="deny", sources=()))
    assert _data(frames.frame(_complete("tc_3", failed=True)))["denied"] is True
    frames.frame(_announce("tc_4", "Run: false"))
    failed = _data(frames.frame(_complete("tc_4", failed=True)))
    assert "denied" not in failed and failed["event"]["data"]["description"] == "💻 Run: false — failed"
    assert frames.frame(_announce("tc_5", "", name="_internal")) is None
