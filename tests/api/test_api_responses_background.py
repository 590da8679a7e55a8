"""Responses background mode with the official ``openai`` SDK: create, poll, resume the stream
with ``starting_after``, cancel, and resume across a ``kill -9`` and restart of the server
(docs/reference/api-server.md#background-responses)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.api.api_helpers import Server, assert_error, call, start_server
from tests.api.conftest import BASE_CONFIG
from tests.api.stored_log import stored_turn
from tests.chaos import sqlite_storage
from tests.timing import eventually, scaled

SLOW = "[[tokens 400]] [[delay 25]] go"


def client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base}/v1", api_key=server.key, max_retries=0, timeout=scaled(60))


def take(stream: Any, count: int | None = None) -> list[Any]:
    """Read ``count`` events of an SDK stream (all when None)."""
    got = []
    for event in stream:
        got.append(event)
        if count is not None and len(got) >= count:
            break
    return got


def numbers(events: list[Any]) -> list[int]:
    return [int(e.sequence_number) for e in events]


async def test_background_create_poll_resume_and_complete(server: Server) -> None:
    sdk = client(server)
    created = await asyncio.to_thread(
        sdk.responses.create, model="hermes-agent", input="[[tokens 30]] hi", background=True
    )
    assert created.status in ("queued", "in_progress") and created.background is True
    done = await eventually(
        lambda: _finished(sdk, created.id), timeout=scaled(30), interval=0.05, what="the response to finish"
    )
    assert done.status == "completed" and done.output_text.startswith("t0 t1")
    whole = await asyncio.to_thread(lambda: take(sdk.responses.retrieve(created.id, stream=True)))
    assert numbers(whole) == list(range(len(whole)))
    assert whole[0].type == "response.created" and whole[-1].type == "response.completed"
    assert whole[-1].response.output_text == done.output_text
    rest = await asyncio.to_thread(
        lambda: take(sdk.responses.retrieve(created.id, stream=True, starting_after=5))
    )
    assert [e.model_dump() for e in rest] == [e.model_dump() for e in whole[6:]]


async def _finished(sdk: openai.OpenAI, response_id: str) -> Any:
    found = await asyncio.to_thread(sdk.responses.retrieve, response_id)
    return found if found.status not in ("queued", "in_progress") else None


async def test_background_cancel(server: Server) -> None:
    sdk = client(server)
    created = await asyncio.to_thread(sdk.responses.create, model="hermes-agent", input=SLOW, background=True)
    first = await asyncio.to_thread(lambda: take(sdk.responses.retrieve(created.id, stream=True), 8))
    assert numbers(first) == list(range(8))
    cancelled = await asyncio.to_thread(sdk.responses.cancel, created.id)
    assert cancelled.status == "cancelled"
    assert (await asyncio.to_thread(sdk.responses.retrieve, created.id)).status == "cancelled"
    rest = await asyncio.to_thread(
        lambda: take(sdk.responses.retrieve(created.id, stream=True, starting_after=7))
    )
    assert numbers(rest) == list(range(8, 8 + len(rest)))
    assert rest[-1].type == "response.incomplete" and rest[-1].response.status == "cancelled"


async def test_bad_cursors_and_another_principals_ids(make_server: Any) -> None:
    keys = ["hk_first-principal-key-0001", "hk_second-principal-key-0002"]
    srv = make_server(f"[api_server]\nkeys = {keys!r}\n")
    sdk = openai.OpenAI(base_url=f"{srv.base}/v1", api_key=keys[0], max_retries=0, timeout=scaled(60))
    first = f"Bearer {keys[0]}"
    created = await asyncio.to_thread(
        sdk.responses.create, model="hermes-agent", input="[[tokens 3]] hi", background=True
    )
    await eventually(lambda: _finished(sdk, created.id), timeout=scaled(30), interval=0.05, what="finished")
    path = f"/v1/responses/{created.id}?stream=true&starting_after="
    for bad in ("abc", "-1", "1" * 19, "1.5"):
        err = assert_error(await call(srv, "GET", path + bad, auth=first), 400, "invalid_value")
        assert err["param"] == "starting_after" and "non-negative integer" in err["message"]
    err = assert_error(await call(srv, "GET", path + "100000", auth=first), 400, "invalid_value")
    assert "past the last event" in err["message"]
    # Not created in the background: it cannot be streamed again.
    plain = await asyncio.to_thread(sdk.responses.create, model="hermes-agent", input="hi")
    assert_error(
        await call(srv, "GET", f"/v1/responses/{plain.id}?stream=true", auth=first), 400, "invalid_value"
    )
    with pytest.raises(openai.BadRequestError):
        await asyncio.to_thread(
            sdk.responses.create, model="hermes-agent", input="hi", background=True, store=False
        )
    # Another key's response or run is unknown (404, as an id never seen), cursor or not.
    second = f"Bearer {keys[1]}"
    unknown = f"resp_{'0' * 32}"
    for response_id in (created.id, unknown):
        for query in ("?stream=true&starting_after=1", "?stream=true", ""):
            reply = await call(srv, "GET", f"/v1/responses/{response_id}{query}", auth=second)
            assert_error(reply, 404, "response_not_found")
        reply = await call(srv, "POST", f"/v1/responses/{response_id}/cancel", auth=second)
        assert_error(reply, 404, "response_not_found")
    run = await call(srv, "POST", "/v1/runs", {"input": "[[tokens 3]] hi"}, auth=first)
    run_id = run.json["run_id"]
    for rid in (run_id, "run_" + "0" * 32):
        for cursor in ("1", "0", "abc"):
            reply = await call(
                srv, "GET", f"/v1/runs/{rid}/events", headers={"Last-Event-ID": cursor}, auth=second
            )
            assert_error(reply, 404, "run_not_found")


async def background_resumes_after_kill_9(
    home: Path, storage: dict[str, Any], config: str = BASE_CONFIG, *, shared: bool = False
) -> None:
    """The scenario, on the storage ``config`` names (``storage``: the same for a reader). On
    records shared by instances (PostgreSQL) the restart settles it ``owner_lost``."""
    code, why = ("owner_lost", "stopped answering") if shared else ("interrupted", "before this response")
    srv = start_server(home, config=config)
    try:
        sdk = client(srv)
        stream = await asyncio.to_thread(
            sdk.responses.create, model="hermes-agent", input=SLOW, background=True, stream=True
        )
        before = await asyncio.to_thread(lambda: take(stream, 40))
        assert numbers(before) == list(range(40))
        response_id = before[0].response.id
        session_id = (await asyncio.to_thread(sdk.responses.retrieve, response_id)).model_extra["hermes"][
            "session_id"
        ]
        srv.proc.kill()  # kill -9 mid-stream
        srv.proc.wait(10)
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
    stored = await stored_turn(storage, session_id)
    seen = [e.delta for e in before if e.type == "response.output_text.delta"]
    # The client saw no delta the killed server had not stored.
    assert seen == stored.deltas[: len(seen)], (seen, stored)
    again = start_server(home, config=config)
    try:
        sdk = client(again)
        cursor = numbers(before)[-1]
        rest = await asyncio.to_thread(
            lambda: take(sdk.responses.retrieve(response_id, stream=True, starting_after=cursor))
        )
        # No gap, no repeat.
        assert numbers(rest) == list(range(cursor + 1, cursor + 1 + len(rest))), numbers(rest)
        end = rest[-1]
        assert end.type == "response.failed" and end.response.status == "failed"
        assert end.response.error is not None and end.response.error.code == code
        assert why in end.response.error.message
        text = "".join(e.delta for e in before + rest if e.type == "response.output_text.delta")
        assert text and end.response.output[0].content[0].text == text == stored.text
        # The cut-off turn's end comes right after the last stored event: after the last stored
        # delta only the events closing the open message, then the terminal one.
        kinds = [e.type for e in before + rest]
        last_delta = len(kinds) - 1 - kinds[::-1].index("response.output_text.delta")
        assert all(k.endswith(".done") for k in kinds[last_delta + 1 : -1]), kinds[last_delta:]
        polled = await asyncio.to_thread(sdk.responses.retrieve, response_id)
        assert polled.status == "failed" and polled.error.code == code
        # The whole stream again: the same events before the cut as the client saw live.
        whole = await asyncio.to_thread(lambda: take(sdk.responses.retrieve(response_id, stream=True)))
        assert [e.model_dump() for e in whole[:40]] == [e.model_dump() for e in before]
        assert numbers(whole) == list(range(len(whole))) and whole[-1].model_dump() == end.model_dump()
        # The next turn, chained to it, works.
        nxt = await asyncio.to_thread(
            sdk.responses.create, model="hermes-agent", input="again", previous_response_id=response_id
        )
        assert nxt.status == "completed"
    finally:
        again.stop()


async def test_background_stream_resumes_across_kill_9_and_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    await background_resumes_after_kill_9(home, sqlite_storage(home))


async def test_the_stream_read_back_after_the_end_is_the_live_one(server: Server) -> None:
    """Events the turn's end makes (the ``.done`` events of the message it closes) are in the
    stream read back from the event log too, numbered as they were live."""
    sdk = client(server)
    stream = await asyncio.to_thread(
        sdk.responses.create, model="hermes-agent", input="[[tokens 5]] hi", background=True, stream=True
    )
    live = await asyncio.to_thread(lambda: take(stream))
    assert live[-1].type == "response.completed"
    assert "response.output_item.done" in [e.type for e in live]

    async def stored() -> bool:
        found = await asyncio.to_thread(sdk.responses.retrieve, live[0].response.id)
        return found.status == "completed"

    await eventually(stored, timeout=scaled(10), what="the response to be stored")
    again = await asyncio.to_thread(lambda: take(sdk.responses.retrieve(live[0].response.id, stream=True)))
    assert [e.model_dump() for e in again] == [e.model_dump() for e in live]
