"""Chat completions: JSON, SSE, sessions, models, disconnects (docs/reference/api-server.md#chat-completions;
checks 7-11, 31)."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path

import aiohttp

from tests.api.api_helpers import Server, assert_error, call, parse_sse
from tests.timing import eventually

USER = {"role": "user", "content": "hello there"}


def chat(*messages: Mapping[str, object], **extra: object) -> dict[str, object]:
    return {"messages": list(messages), **extra}


async def _active_turns(server: Server, count: int) -> bool:
    """Whether the server reports exactly ``count`` running turns."""
    detail = (await call(server, "GET", "/health/detailed")).json
    return bool(detail["api_server"]["active_turns"] == count)


async def test_non_stream_shape_headers_and_session_id(server: Server) -> None:
    body = chat({"role": "system", "content": "be brief"}, USER, model="hermes-agent")
    reply = await call(server, "POST", "/v1/chat/completions", body)
    assert reply.status == 200
    data = reply.json
    assert data["object"] == "chat.completion"
    assert data["id"].startswith("chatcmpl-")
    assert data["model"] == "hermes-agent"
    assert data["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "You said: hello there"},
            "finish_reason": "stop",
        }
    ]
    assert (
        data["usage"]["total_tokens"] == data["usage"]["prompt_tokens"] + data["usage"]["completion_tokens"]
    )
    session_id = reply.headers["X-Hermes-Session-Id"]
    assert re.fullmatch(r"api-[0-9a-f]{16}", session_id)
    assert reply.headers["X-Hermes-Model"] == "mock:echo"
    hermes = data["hermes"]
    assert hermes["session_id"] == session_id
    assert hermes["completed"] is True and hermes["failed"] is False
    assert None not in hermes.values()
    # The same first turn again is another conversation: another session.
    again = await call(server, "POST", "/v1/chat/completions", body)
    assert re.fullmatch(r"api-[0-9a-f]{16}", again.headers["X-Hermes-Session-Id"])
    assert again.headers["X-Hermes-Session-Id"] != session_id


async def test_regenerate_and_continuation_never_duplicate_history(server: Server) -> None:
    first = {"role": "user", "content": "first question"}
    opener = chat(first, model="mock:history")
    r1 = await call(server, "POST", "/v1/chat/completions", opener)
    assert r1.json["choices"][0]["message"]["content"] == "Turns: first question"
    assistant = {"role": "assistant", "content": r1.json["choices"][0]["message"]["content"]}
    follow = chat(first, assistant, {"role": "user", "content": "second"}, model="mock:history")
    for _ in range(3):  # the frontend regenerates the last answer twice
        r2 = await call(server, "POST", "/v1/chat/completions", follow)
        assert r2.json["choices"][0]["message"]["content"] == "Turns: first question | second"
        assert r2.headers["X-Hermes-Session-Id"] == r1.headers["X-Hermes-Session-Id"]
    edited = chat(first, assistant, {"role": "user", "content": "edited second"}, model="mock:history")
    r3 = await call(server, "POST", "/v1/chat/completions", edited)
    assert r3.json["choices"][0]["message"]["content"] == "Turns: first question | edited second"


async def test_stream_order_progress_frames_and_done(server: Server) -> None:
    body = chat({"role": "user", "content": 'run it [[tool terminal {"command":"echo hi"}]]'}, stream=True)
    reply = await call(server, "POST", "/v1/chat/completions", body)
    assert reply.status == 200
    assert reply.headers["X-Hermes-Session-Id"].startswith("api-")
    assert reply.headers["X-Accel-Buffering"] == "no"
    frames = parse_sse(reply.text)
    assert frames[-1]["data"] == "[DONE]"
    chunks = [f["data"] for f in frames[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert len({c["id"] for c in chunks}) == 1
    progress = [f for f in frames if f.get("event") == "hermes.tool.progress"]
    assert [p["data"]["status"] for p in progress] == ["running", "completed"]
    # A named frame whose data is also a chunk with one empty-delta choice: the canonical SDK loop
    # (chunk.choices[0].delta.content) reads nothing from it instead of raising IndexError.
    empty = [{"index": 0, "delta": {}, "finish_reason": None}]
    assert all(p["data"]["choices"] == empty for p in progress)
    assert progress[0]["data"]["tool"] == "terminal" and progress[0]["data"]["toolCallId"].startswith("tc_")
    assert progress[1]["data"]["failed"] is False and "error" not in progress[1]["data"]
    # Open WebUI shows a top-level status event as a live status line.
    assert progress[0]["data"]["event"] == {
        "type": "status",
        "data": {"description": "💻 Run: echo hi", "done": False},
    }
    ending = progress[1]["data"]["event"]["data"]
    assert ending["done"] is True and re.fullmatch(
        r"💻 Run: echo hi — done in \d+\.\d s", ending["description"]
    )
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == "Done: hi"
    final = chunks[-1]
    assert final["choices"][0]["finish_reason"] == "stop"
    assert final["usage"]["completion_tokens"] >= 1
    assert "hermes" not in final


async def test_include_usage_moves_usage_into_one_separate_chunk(server: Server) -> None:
    body = chat(USER, stream=True, stream_options={"include_usage": True})
    frames = parse_sse((await call(server, "POST", "/v1/chat/completions", body)).text)
    chunks = [f["data"] for f in frames if isinstance(f.get("data"), dict)]
    with_usage = [c for c in chunks if "usage" in c]
    assert len(with_usage) == 1
    assert with_usage[0]["choices"] == []
    assert chunks[-1] is with_usage[0]


async def test_outcomes_map_to_finish_reasons_and_502(server: Server) -> None:
    truncated = await call(
        server, "POST", "/v1/chat/completions", chat({"role": "user", "content": "x [[finish length]]"})
    )
    assert truncated.json["choices"][0]["finish_reason"] == "length"
    assert truncated.json["hermes"]["error_code"] == "output_truncated"
    assert truncated.headers["X-Hermes-Partial"] == "true"
    refused = await call(
        server, "POST", "/v1/chat/completions", chat({"role": "user", "content": "x [[finish refusal]]"})
    )
    assert refused.json["choices"][0]["finish_reason"] == "content_filter"
    assert refused.json["hermes"]["error_code"] == "refusal"
    failed = await call(
        server, "POST", "/v1/chat/completions", chat({"role": "user", "content": "x [[error boom]]"})
    )
    err = assert_error(failed, 502, "provider_error")
    assert err["hermes"]["failed"] is True
    streamed = await call(
        server,
        "POST",
        "/v1/chat/completions",
        chat({"role": "user", "content": "x [[error boom]]"}, stream=True),
    )
    frames = parse_sse(streamed.text)
    final = frames[-2]["data"]
    assert final["choices"][0]["finish_reason"] == "error"
    assert final["error"] == {"message": "boom", "type": "server_error"}
    assert final["hermes"]["error_code"] == "provider_error"
    # Just before it, the error alone as a bare JSON line: Open WebUI stores it with the message
    # (it survives a reload); SSE parsers ignore a line that is no SSE field.
    assert frames[-3] == {"other": '{"error":{"message":"boom","type":"server_error"}}'}
    assert [f for f in frames if "other" in f] == [frames[-3]]


async def test_bad_bodies_get_precise_400s(server: Server) -> None:
    cases = [
        ({}, "missing_required_parameter", "messages"),
        ({"messages": []}, "invalid_value", "messages"),
        ({"messages": ["hi"]}, "invalid_value", "messages[0]"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "invalid_value", "messages[0].role"),
        ({"messages": [{"role": "assistant", "content": "x"}]}, "invalid_value", "messages"),
        ({"messages": [USER], "n": 2}, "invalid_value", "n"),
        ({"messages": [USER], "stream": "maybe"}, "invalid_value", "stream"),
        ({"messages": [USER], "model": 7}, "invalid_value", "model"),
        (
            {"messages": [USER], "model_options": {"reasoning_effort": "huge"}},
            "invalid_value",
            "model_options",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "file", "file": {}}]}]},
            "unsupported_content_type",
            "messages[0].content",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x"}}]}
                ]
            },
            "invalid_image_url",
            "messages[0].content",
        ),
    ]
    for body, code, param in cases:
        err = assert_error(await call(server, "POST", "/v1/chat/completions", body), 400, code)
        assert err["param"] == param, (body, err)


async def test_disconnect_interrupts_the_turn_and_the_session_stays_usable(server: Server) -> None:
    headers = {**server.auth(), "X-Hermes-Session-Id": "disconnect-test"}
    body = chat({"role": "user", "content": "[[tokens 200]] [[delay 50]] go"}, stream=True)
    async with aiohttp.ClientSession() as client:
        resp = await client.post(server.base + "/v1/chat/completions", json=body, headers=headers)
        await resp.content.readline()
        resp.close()
    await eventually(lambda: _active_turns(server, 0), what="the interrupted turn to end")
    reply = await call(
        server, "POST", "/v1/chat/completions", chat(USER), headers={"X-Hermes-Session-Id": "disconnect-test"}
    )
    assert reply.status == 200
    assert reply.json["choices"][0]["message"]["content"] == "You said: hello there"


async def test_session_header_continues_stored_history_and_is_validated(server: Server) -> None:
    h = {"X-Hermes-Session-Id": "host-chat-1", "X-Hermes-Session-Key": "agent:main:webui:dm:user-42"}
    r1 = await call(
        server,
        "POST",
        "/v1/chat/completions",
        chat({"role": "user", "content": "alpha"}, model="mock:history"),
        headers=h,
    )
    assert r1.headers["X-Hermes-Session-Id"] == "host-chat-1"
    assert r1.headers["X-Hermes-Session-Key"] == "agent:main:webui:dm:user-42"
    body = chat(
        {"role": "user", "content": "ignored"},
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": "beta"},
        model="mock:history",
    )
    r2 = await call(server, "POST", "/v1/chat/completions", body, headers=h)
    assert r2.json["choices"][0]["message"]["content"] == "Turns: alpha | beta"
    sse = await call(server, "POST", "/v1/chat/completions", chat(USER, stream=True), headers=h)
    assert sse.headers["X-Hermes-Session-Key"] == "agent:main:webui:dm:user-42"
    for bad in ("x" * 257, "a/b", ".."):
        err = assert_error(
            await call(
                server, "POST", "/v1/chat/completions", chat(USER), headers={"X-Hermes-Session-Id": bad}
            ),
            400,
            "invalid_session_id",
        )
        assert err["param"] == "X-Hermes-Session-Id"
    err = assert_error(
        await call(
            server, "POST", "/v1/chat/completions", chat(USER), headers={"X-Hermes-Session-Key": "a\tb"}
        ),
        400,
        "invalid_session_key",
    )


async def test_model_field_is_a_per_turn_hot_swap(server: Server) -> None:
    h = {"X-Hermes-Session-Id": "model-swap"}
    alt = await call(server, "POST", "/v1/chat/completions", chat(USER, model="mock:alt"), headers=h)
    assert alt.json["choices"][0]["message"]["content"] == "alt: You said: hello there"
    assert alt.headers["X-Hermes-Model"] == "mock:alt"
    assert alt.json["hermes"]["model_source"] == "request"
    assert alt.json["model"] == "mock:alt"
    plain = await call(server, "POST", "/v1/chat/completions", chat(USER), headers=h)
    assert plain.json["choices"][0]["message"]["content"] == "You said: hello there"
    assert plain.json["model"] == "hermes-agent"
    gpt = await call(server, "POST", "/v1/chat/completions", chat(USER, model="gpt-4o"), headers=h)
    assert gpt.status == 200
    assert gpt.json["hermes"]["requested_model"] == "gpt-4o"
    assert gpt.json["hermes"]["model"] == "mock:echo"


async def test_direct_model_requests_and_aliases(make_server: Callable[..., Server]) -> None:
    srv = make_server('[api_server]\ndirect_model_requests = true\nmodel_aliases = { fast = "mock:alt" }\n')
    models = (await call(srv, "GET", "/v1/models")).json["data"]
    assert [m["id"] for m in models] == ["hermes-agent", "fast"]
    assert models[1]["root"] == "mock:alt"
    assert (await call(srv, "GET", "/v1/models/fast")).json["id"] == "fast"
    assert_error(await call(srv, "GET", "/v1/models/nope"), 404, "model_not_found")
    aliased = await call(srv, "POST", "/v1/chat/completions", chat(USER, model="fast"))
    assert aliased.json["choices"][0]["message"]["content"].startswith("alt: ")
    assert aliased.json["hermes"]["model_source"] == "alias"
    bare = await call(srv, "POST", "/v1/chat/completions", chat(USER, model="alt"))
    assert bare.status == 200, bare.text
    assert bare.headers["X-Hermes-Model"] == "mock:alt"
    assert_error(
        await call(srv, "POST", "/v1/chat/completions", chat(USER, model="no-such-model-xyz")),
        400,
        "model_not_found",
    )
    assert_error(
        await call(srv, "POST", "/v1/chat/completions", chat(USER, model="fast", provider="mock")),
        400,
        "invalid_value",
    )


async def test_slash_text_is_an_ordinary_turn(server: Server) -> None:
    reply = await call(server, "POST", "/v1/chat/completions", chat({"role": "user", "content": "/help"}))
    assert reply.json["choices"][0]["message"]["content"] == "You said: /help"


async def test_workspaces_are_per_session_and_roots_are_enforced(server: Server, tmp_path: Path) -> None:
    body = chat({"role": "user", "content": 'where [[tool terminal {"command":"pwd"}]]'})
    reply = await call(
        server, "POST", "/v1/chat/completions", body, headers={"X-Hermes-Session-Id": "ws-check"}
    )
    expected = (server.home / "workspaces" / "ws-check").resolve()
    assert reply.json["choices"][0]["message"]["content"] == f"Done: {expected}"
    err = assert_error(
        await call(
            server, "POST", "/v1/chat/completions", chat(USER), headers={"X-Hermes-Workspace": str(tmp_path)}
        ),
        400,
        "invalid_workspace",
    )
    assert err["param"] == "X-Hermes-Workspace"


async def test_a_workspace_folder_that_cannot_be_made_is_a_500_and_nothing_is_stored(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    home = tmp_path / "blocked-home"
    home.mkdir()
    (home / "workspaces").write_text("a file where the workspaces folder should be")
    server = make_server(home=home)
    headers = {"X-Hermes-Session-Id": "no-folder"}
    assert_error(
        await call(server, "POST", "/v1/chat/completions", chat(USER), headers=headers), 500, "internal_error"
    )
    # The server stays up, and the session was never created nor left leased.
    assert (await call(server, "GET", "/health")).status == 200
    [database] = home.rglob("hermes.sqlite3")
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT count(*) FROM sessions WHERE id = 'no-folder'").fetchone()[0] == 0


async def test_a_burst_of_new_sessions_beyond_the_opening_limit_all_complete(
    make_server: Callable[..., Server],
) -> None:
    # More new sessions at once than may be opening together (16), plus repeats of one
    # session: every request still gets its own complete answer, and none waits forever.
    server = make_server("[api_server]\nmax_concurrent_runs = 64\n")
    bodies = [chat({"role": "user", "content": f"burst {i}"}, stream=True) for i in range(40)]
    shared = {"X-Hermes-Session-Id": "burst-shared"}
    replies = await asyncio.wait_for(
        asyncio.gather(
            *(call(server, "POST", "/v1/chat/completions", body) for body in bodies),
            *(call(server, "POST", "/v1/chat/completions", chat(USER), headers=shared) for _ in range(4)),
        ),
        60,
    )
    for i, reply in enumerate(replies[:40]):
        assert reply.status == 200, reply.text
        assert reply.text.rstrip().endswith("data: [DONE]")
        text = "".join(
            f["data"]["choices"][0]["delta"].get("content", "")
            for f in parse_sse(reply.text)
            if isinstance(f.get("data"), dict) and f["data"].get("choices")
        )
        assert text == f"You said: burst {i}"
    # The shared session serializes its turns: each one either ran or was refused as busy.
    assert {r.status for r in replies[40:]} <= {200, 409}
    assert any(r.status == 200 for r in replies[40:])


async def test_chat_approvals_are_denied_at_once(server: Server) -> None:
    body = chat({"role": "user", "content": '[[tool terminal {"command":"hermes-guard-test"}]]'}, stream=True)
    reply = await asyncio.wait_for(call(server, "POST", "/v1/chat/completions", body), 10)
    progress = [f["data"] for f in parse_sse(reply.text) if f.get("event") == "hermes.tool.progress"]
    assert progress[-1]["status"] == "completed" and progress[-1]["failed"] is True
    assert progress[-1]["denied"] is True
    assert progress[-1]["event"]["data"] == {
        "description": "💻 Run: hermes-guard-test — denied",
        "done": True,
    }


async def test_a_session_held_by_another_process_gets_409(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    home = tmp_path / "shared"
    first = make_server(home=home)
    second = make_server(home=home)
    headers = {"X-Hermes-Session-Id": "leased"}
    slow = asyncio.create_task(
        call(
            first,
            "POST",
            "/v1/chat/completions",
            chat({"role": "user", "content": "[[tokens 10]] [[delay 100]] x"}),
            headers=headers,
        )
    )
    # The first server holds the session's lease once its turn runs.
    await eventually(lambda: _active_turns(first, 1), what="the slow turn to start")
    other = await call(
        second, "POST", "/v1/chat/completions", chat(USER), headers={**headers, **second.auth()}
    )
    assert_error(other, 409, "session_in_use")
    assert (await slow).status == 200
    after = await call(second, "POST", "/v1/chat/completions", chat(USER), headers=headers)
    assert after.status == 200


async def test_non_stream_disconnect_also_interrupts(server: Server) -> None:
    headers = {**server.auth(), "X-Hermes-Session-Id": "disconnect-json"}
    body = chat({"role": "user", "content": "[[tokens 200]] [[delay 50]] go"})
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=0.5)) as client:
        try:
            await client.post(server.base + "/v1/chat/completions", json=body, headers=headers)
        except TimeoutError:
            pass
    await eventually(lambda: _active_turns(server, 0), what="the interrupted turn to end")
    reply = await call(
        server, "POST", "/v1/chat/completions", chat(USER), headers={"X-Hermes-Session-Id": "disconnect-json"}
    )
    assert reply.json["choices"][0]["message"]["content"] == "You said: hello there"


async def test_an_idle_stream_receives_keepalive_comments(server: Server) -> None:
    body = chat({"role": "user", "content": "[[tokens 1]] [[delay 10300]] slow"}, stream=True)
    reply = await call(server, "POST", "/v1/chat/completions", body, timeout=40)
    frames = parse_sse(reply.text)
    assert {"comment": "keepalive"} in frames
    assert frames[-1]["data"] == "[DONE]"
    text = "".join(
        f["data"]["choices"][0]["delta"].get("content", "")
        for f in frames
        if isinstance(f.get("data"), dict) and f["data"]["choices"]
    )
    assert text == "t0"


async def test_a_hidden_reasoning_does_not_hold_back_the_keepalive(server: Server) -> None:
    # Reasoning deltas (hidden: show_reasoning is off) write nothing, so they must not put off
    # the keep-alive: a proxy that cuts idle connections would see 12 s of silence.
    words = " ".join(f"r{i}" for i in range(12))
    body = chat(
        {"role": "user", "content": f"[[reason {words}]] [[delay 1000]] [[tokens 1]] think"}, stream=True
    )
    reply = await call(server, "POST", "/v1/chat/completions", body, timeout=40)
    frames = parse_sse(reply.text)
    content_at = next(
        i
        for i, f in enumerate(frames)
        if isinstance(f.get("data"), dict)
        and f["data"]["choices"]
        and "content" in f["data"]["choices"][0]["delta"]
    )
    assert {"comment": "keepalive"} in frames[:content_at]
    assert "reasoning_content" not in reply.text
    assert frames[-1]["data"] == "[DONE]"


async def test_images_to_a_model_without_vision_are_dropped_with_a_warning(server: Server) -> None:
    pixel = (
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
        "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    )
    content = [{"type": "text", "text": "what is this"}, {"type": "image_url", "image_url": {"url": pixel}}]
    reply = await call(server, "POST", "/v1/chat/completions", chat({"role": "user", "content": content}))
    assert reply.status == 200
    assert reply.headers["X-Hermes-Warning"] == "images_dropped"
    assert reply.json["choices"][0]["message"]["content"] == "You said: what is this"
    sse = await call(
        server, "POST", "/v1/chat/completions", chat({"role": "user", "content": content}, stream=True)
    )
    assert sse.headers["X-Hermes-Warning"] == "images_dropped"
    run = await call(
        server,
        "POST",
        "/v1/runs",
        {
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_image", "image_url": pixel},
                        {"type": "input_text", "text": "x"},
                    ],
                }
            ]
        },
    )
    assert run.status == 202 and run.headers["X-Hermes-Warning"] == "images_dropped"


async def test_media_tags_inside_the_workspace_are_inlined(server: Server) -> None:
    folder = server.home / "workspaces" / "media-chat"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pic.png").write_bytes(b"\x89PNG fake")
    (server.home / "secret.png").write_bytes(b"outside")
    body = chat({"role": "user", "content": f"MEDIA:pic.png and MEDIA:{server.home / 'secret.png'}"})
    reply = await call(
        server, "POST", "/v1/chat/completions", body, headers={"X-Hermes-Session-Id": "media-chat"}
    )
    content = reply.json["choices"][0]["message"]["content"]
    assert "data:image/png;base64,iVBORyBmYWtl" in content
    assert f"MEDIA:{server.home / 'secret.png'}" in content
