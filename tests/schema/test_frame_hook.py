"""The frame hook: a frame off the export fails the test that received it, with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import wire_check

pytest_plugins = ["pytester"]

DEMO = """
from tests import wire_check


def event(type_, payload):
    params = {"type": type_, "session_id": "s", "seq": 1, "payload": payload}
    return {"jsonrpc": "2.0", "method": "event", "params": params}


def test_gets_a_delta_whose_text_is_a_number():
    wire_check.check_tui(event("message.delta", {"text": 5}))


def test_gets_an_event_nobody_declared():
    wire_check.check_tui(event("message.sparkle", {}))


def test_gets_an_undeclared_error_code():
    wire_check.check_tui({"jsonrpc": "2.0", "id": 1, "error": {"code": 4999, "message": "odd"}})


def test_gets_a_result_off_its_method():
    wire_check.check_tui({"jsonrpc": "2.0", "id": 4, "result": {"closed": "yes"}}, "session.close")


def test_gets_good_frames():
    wire_check.check_tui(event("message.delta", {"text": "hi"}))
    wire_check.check_tui(event("subagent.start", {"anything": True}))  # not typed yet: any object
    wire_check.check_tui({"jsonrpc": "2.0", "id": 2, "error": {"code": 4001, "message": "session not live"}})
    wire_check.check_tui({"jsonrpc": "2.0", "id": 3, "result": {"session_id": "s"}})
    wire_check.check_tui({"jsonrpc": "2.0", "id": 5, "result": {"closed": False}}, "session.close")
"""


def test_a_frame_off_the_schema_fails_the_test_that_received_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("from tests.conftest import frames_follow_the_schema  # noqa: F401\n")
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_demo=DEMO)
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, errors=4)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_gets_a_delta_whose_text_is_a_number*",
            "*tui: event message.delta: TextDelta: 5 is not of type 'string'*",
            "*ERROR at teardown of test_gets_an_event_nobody_declared*",
            "*event 'message.sparkle' is not in the export*",
            "*ERROR at teardown of test_gets_an_undeclared_error_code*",
            "*error code 4999 is not in the export*",
            "*ERROR at teardown of test_gets_a_result_off_its_method*",
            "*result of session.close: CloseResult: 'yes' is not of type 'boolean'*",
        ]
    )
    assert "test_gets_good_frames" not in "\n".join(
        line for line in result.stdout.lines if "ERROR at teardown" in line
    )


def test_the_tui_checker_reads_the_same_export_as_the_command() -> None:
    from hermes_tui_gateway.schema_doc import build

    assert wire_check.document("tui") == build()


async def test_api_responses_and_stream_events_are_checked_against_the_export(tmp_path: Path) -> None:
    from tests.api.api_helpers import call, start_server

    server = start_server(tmp_path / "home", config="[titles]\nrefine = false\n")
    try:
        body = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        stream = await call(server, "POST", "/v1/chat/completions", body)
        caps = await call(server, "GET", "/v1/capabilities")
    finally:
        server.stop()
    assert stream.status == 200 and "chat.completion.chunk" in stream.text
    sse = stream.headers["Content-Type"]
    assert wire_check.api_problems("POST", "/v1/chat/completions", 200, sse, stream.text) == []
    # The same stream with a chunk whose choices are not a list: the checker names it.
    broken = stream.text.replace('"choices":[', '"choices":7,"was":[', 1)
    assert broken != stream.text
    found = wire_check.api_problems("POST", "/v1/chat/completions", 200, sse, broken)
    assert any("chat.completion.chunk" in p for p in found), found
    json_type = caps.headers["Content-Type"]
    assert wire_check.api_problems("GET", "/v1/capabilities", 200, json_type, caps.text) == []
    without = caps.json
    del without["schema"]
    found = wire_check.api_problems("GET", "/v1/capabilities", 200, json_type, json.dumps(without))
    assert found == ["Capabilities: 'schema' is a required property at []"], found


SSE = "text/event-stream; charset=utf-8"


def _data(payload: dict[str, object], head: str = "") -> str:
    return head + "data: " + json.dumps(payload) + "\n\n"


def test_stream_payloads_are_closed_a_field_off_the_export_is_named() -> None:
    """Chat chunks, run events and Responses events validate against closed schemas: a field
    the export does not list (or a delta with one) is a violation, a run event is checked by its
    ``event`` field (its frames have no ``event:`` line)."""
    chunk: dict[str, object] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "hermes-agent",
        "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}],
    }
    chat = ("POST", "/v1/chat/completions", 200, SSE)
    assert wire_check.api_problems(*chat, _data(chunk)) == []
    odd = dict(chunk, choices=[{"index": 0, "delta": {"contents": "hi"}, "finish_reason": None}])
    found = wire_check.api_problems(*chat, _data(odd))
    assert found and "'contents' was unexpected" in found[0], found

    delta = {"event": "message.delta", "run_id": "run_1", "seq": 2, "timestamp": 1.5, "delta": "hi"}
    runs = ("GET", "/v1/runs/run_1/events", 200, SSE)
    assert wire_check.api_problems(*runs, _data(delta, "id: 2\n")) == []
    found = wire_check.api_problems(*runs, _data({**delta, "text": "hi"}, "id: 2\n"))
    assert found and "RunEventMessageDelta" in found[0] and "'text' was unexpected" in found[0], found
    found = wire_check.api_problems(*runs, _data({**delta, "event": "message.sparkle"}, "id: 2\n"))
    assert found == ["stream event 'message.sparkle' is not in the export"], found

    text = {
        "type": "response.output_text.delta",
        "sequence_number": 4,
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "delta": "hi",
        "logprobs": [],
    }
    responses = ("POST", "/v1/responses", 200, SSE)
    head = "event: response.output_text.delta\n"
    assert wire_check.api_problems(*responses, _data(text, head)) == []
    found = wire_check.api_problems(*responses, _data({**text, "text": "hi"}, head))
    assert found and "ResponseOutputTextDelta" in found[0], found


def test_every_stream_payload_schema_is_closed() -> None:
    """Every SSE payload of the API export lists its fields (``additionalProperties: false``),
    except the ``subagent.*`` run events, whose kinds add fields of their own."""
    doc = wire_check.document("api")
    schemas = doc["components"]["schemas"]
    opened = []
    for item in doc["paths"].values():
        for op in item.values():
            for name, ref in (op.get("x-hermes-sse-events") or {}).items():
                schema = schemas[ref["$ref"].rsplit("/", 1)[1]]
                if schema.get("additionalProperties") is not False and not name.startswith("subagent."):
                    opened.append(f"{op['operationId']} {name}")
    assert not opened, opened
