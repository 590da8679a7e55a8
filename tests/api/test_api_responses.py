"""Responses API: objects, store, chaining, streaming (docs/reference/api-server.md#responses; checks
12-14)."""

from __future__ import annotations

from tests.api.api_helpers import Server, assert_error, call, parse_sse

TOOL_INPUT = 'list [[tool terminal {"command":"echo listed"}]]'


async def test_tool_turn_items_retrieve_and_delete(server: Server) -> None:
    reply = await call(server, "POST", "/v1/responses", {"input": TOOL_INPUT})
    assert reply.status == 200
    obj = reply.json
    assert obj["object"] == "response" and obj["status"] == "completed"
    assert [item["type"] for item in obj["output"]] == ["function_call", "function_call_output", "message"]
    call_item, output_item, message = obj["output"]
    assert call_item["call_id"] == output_item["call_id"] and call_item["call_id"].startswith("tc_")
    assert isinstance(output_item["output"], str) and "listed" in output_item["output"]
    assert message["content"][0]["text"] == "Done: listed"
    assert reply.headers["X-Hermes-Session-Id"] == obj["hermes"]["session_id"]
    assert reply.headers["X-Hermes-Model"] == "mock:echo"
    got = await call(server, "GET", f"/v1/responses/{obj['id']}")
    assert got.json == obj
    deleted = await call(server, "DELETE", f"/v1/responses/{obj['id']}")
    assert deleted.json == {"id": obj["id"], "object": "response", "deleted": True}
    assert_error(await call(server, "GET", f"/v1/responses/{obj['id']}"), 404, "response_not_found")
    assert_error(await call(server, "DELETE", f"/v1/responses/{obj['id']}"), 404, "response_not_found")


async def test_store_false_is_not_retrievable_or_chainable(server: Server) -> None:
    reply = await call(server, "POST", "/v1/responses", {"input": "hi", "store": False})
    assert reply.json["store"] is False
    assert_error(await call(server, "GET", f"/v1/responses/{reply.json['id']}"), 404, "response_not_found")
    chained = await call(
        server, "POST", "/v1/responses", {"input": "more", "previous_response_id": reply.json["id"]}
    )
    assert_error(chained, 404, "response_not_found")


async def test_chaining_keeps_the_session_and_forking_from_an_older_one(server: Server) -> None:
    r1 = (await call(server, "POST", "/v1/responses", {"input": "one", "model": "mock:history"})).json
    r2 = (
        await call(
            server,
            "POST",
            "/v1/responses",
            {"input": "two", "model": "mock:history", "previous_response_id": r1["id"]},
        )
    ).json
    assert r2["output"][-1]["content"][0]["text"] == "Turns: one | two"
    assert r2["hermes"]["session_id"] == r1["hermes"]["session_id"]
    fork = (
        await call(
            server,
            "POST",
            "/v1/responses",
            {"input": "other", "model": "mock:history", "previous_response_id": r1["id"]},
        )
    ).json
    assert fork["output"][-1]["content"][0]["text"] == "Turns: one | other"
    assert fork["hermes"]["session_id"] != r1["hermes"]["session_id"]
    last = r2
    for word in ("three", "four", "five"):
        last = (
            await call(
                server,
                "POST",
                "/v1/responses",
                {"input": word, "model": "mock:history", "previous_response_id": last["id"]},
            )
        ).json
    assert last["output"][-1]["content"][0]["text"] == "Turns: one | two | three | four | five"


async def test_conversation_names_and_conflicts(server: Server) -> None:
    a = (
        await call(
            server,
            "POST",
            "/v1/responses",
            {"input": "a", "model": "mock:history", "conversation": "thread-1"},
        )
    ).json
    b = (
        await call(
            server,
            "POST",
            "/v1/responses",
            {"input": "b", "model": "mock:history", "conversation": {"id": "thread-1"}},
        )
    ).json
    assert b["output"][-1]["content"][0]["text"] == "Turns: a | b"
    assert b["hermes"]["session_id"] == a["hermes"]["session_id"]
    assert_error(
        await call(
            server,
            "POST",
            "/v1/responses",
            {"input": "x", "conversation": "thread-1", "previous_response_id": a["id"]},
        ),
        400,
        "conflicting_parameters",
    )
    assert_error(
        await call(
            server,
            "POST",
            "/v1/responses",
            {"input": "x", "previous_response_id": a["id"]},
            headers={"X-Hermes-Session-Id": "s"},
        ),
        400,
        "conflicting_parameters",
    )
    assert_error(
        await call(server, "POST", "/v1/responses", {"input": "x", "previous_response_id": "resp_nope"}),
        404,
        "response_not_found",
    )


async def test_bad_response_bodies(server: Server) -> None:
    cases = [
        ({}, "missing_required_parameter"),
        ({"input": ""}, "missing_required_parameter"),
        ({"input": []}, "missing_required_parameter"),
        ({"input": 5}, "invalid_value"),
        ({"input": [{"type": "weird"}]}, "unsupported_content_type"),
        ({"input": "x", "store": "yes"}, "invalid_value"),
        ({"input": "x", "background": True, "store": False}, "invalid_value"),
        ({"input": "x", "background": "yes"}, "invalid_value"),
        ({"input": "x", "instructions": 3}, "invalid_value"),
        ({"input": "x", "metadata": {"a": 1}}, "invalid_value"),
        ({"input": "x", "conversation": {"name": "x"}}, "invalid_value"),
        ({"input": [{"role": "assistant", "content": "x"}]}, "invalid_value"),
    ]
    for body, code in cases:
        assert_error(await call(server, "POST", "/v1/responses", body), 400, code)


async def test_a_prompt_of_unicode_whitespace_is_a_400_on_every_route(server: Server) -> None:
    # NEL and friends: blank to the core's check, which must answer as the client's mistake.
    for blank in ("\u0085", "\u2028", " \u3000 "):
        reply = await call(server, "POST", "/v1/responses", {"input": blank})
        assert reply.status == 400, (blank, reply.status, reply.text)
        chat = {"model": "hermes-agent", "messages": [{"role": "user", "content": blank}]}
        reply = await call(server, "POST", "/v1/chat/completions", chat)
        assert reply.status == 400, (blank, reply.status, reply.text)


async def test_stream_event_order_and_terminal_equals_get(server: Server) -> None:
    reply = await call(server, "POST", "/v1/responses", {"input": TOOL_INPUT, "stream": True})
    frames = parse_sse(reply.text)
    assert all(f["data"] != "[DONE]" for f in frames if "data" in f)
    events = [f["data"] for f in frames if "data" in f]
    assert [f["event"] for f in frames if "data" in f] == [e["type"] for e in events]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    types = [e["type"] for e in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert (
        types.index("response.function_call_arguments.done") == types.index("response.output_item.added") + 1
    )
    first_delta = types.index("response.output_text.delta")
    assert types.index("response.content_part.added") < first_delta
    assert (
        types.index("response.output_text.done") < types.index("response.content_part.done") < len(types) - 1
    )
    final = events[-1]["response"]
    got = await call(server, "GET", f"/v1/responses/{final['id']}")
    assert got.json == final
    outputs = [i for i in final["output"] if i["type"] == "function_call_output"]
    assert isinstance(outputs[0]["output"], str)


async def test_another_key_cannot_see_a_response(make_server: object) -> None:
    key_a, key_b = "key-a-" + "q" * 20, "key-b-" + "z" * 20
    srv = make_server(f'[api_server]\nkeys = ["{key_a}", "{key_b}"]\n')  # type: ignore[operator]
    created = await call(srv, "POST", "/v1/responses", {"input": "mine"}, auth=f"Bearer {key_a}")
    rid = created.json["id"]
    assert (await call(srv, "GET", f"/v1/responses/{rid}", auth=f"Bearer {key_a}")).status == 200
    assert_error(
        await call(srv, "GET", f"/v1/responses/{rid}", auth=f"Bearer {key_b}"), 404, "response_not_found"
    )
    assert_error(
        await call(srv, "DELETE", f"/v1/responses/{rid}", auth=f"Bearer {key_b}"), 404, "response_not_found"
    )
    run = await call(srv, "POST", "/v1/runs", {"input": "go"}, auth=f"Bearer {key_a}")
    run_id = run.json["run_id"]
    for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/events"):
        assert_error(await call(srv, "GET", path, auth=f"Bearer {key_b}"), 404, "run_not_found")
    assert_error(
        await call(srv, "POST", f"/v1/runs/{run_id}/stop", auth=f"Bearer {key_b}"), 404, "run_not_found"
    )


async def test_stream_merges_queued_deltas_without_changing_the_text(make_server: object) -> None:
    """Deltas already queued leave as one delta event each; text, reasoning and order hold."""
    srv = make_server("[api_server]\nshow_reasoning = true\n")  # type: ignore[operator]
    count = 3000
    body = {"input": f"[[reason weighing it up]] [[tokens {count}]]", "stream": True}
    reply = await call(srv, "POST", "/v1/responses", body)
    events = [f["data"] for f in parse_sse(reply.text) if "data" in f]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    types = [e["type"] for e in events]
    text_deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    thought_deltas = [e["delta"] for e in events if e["type"] == "response.reasoning_text.delta"]
    expected = " ".join(f"t{i}" for i in range(count))
    assert "".join(text_deltas) == expected and all(text_deltas)
    assert "".join(thought_deltas) == "weighing it up"
    last_thought = max(i for i, t in enumerate(types) if t == "response.reasoning_text.delta")
    assert last_thought < types.index("response.output_text.delta")
    final = events[-1]["response"]
    message = [item for item in final["output"] if item["type"] == "message"]
    assert message[0]["content"][0]["text"] == expected
    # The mock yields its deltas faster than one wake-up each: they must not cost an event each.
    assert len(text_deltas) < count // 2, len(text_deltas)
