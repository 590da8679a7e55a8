"""``client.responses.input_items.list(id)`` and ``client.responses.cancel(id)`` through the official
``openai`` SDK against a real ``hermes api``."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import openai
import pytest

from tests.api.api_helpers import Server, assert_error, call
from tests.timing import eventually_sync, scaled


def client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base}/v1", api_key=server.key, max_retries=0)


CONVERSATION: list[Any] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "first question"},
    {"role": "assistant", "content": "first answer"},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "look at this"},
            {"type": "input_image", "image_url": "https://example.test/cat.png", "detail": "low"},
        ],
    },
]


async def test_input_items_list_and_paginate(server: Server) -> None:
    def run() -> None:
        sdk = client(server)
        made = sdk.responses.create(model="hermes-agent", input=CONVERSATION)
        assert made.status == "completed"

        page = sdk.responses.input_items.list(made.id)  # newest first by default
        assert [(i.type, i.role) for i in page.data] == [
            ("message", "user"),
            ("message", "assistant"),
            ("message", "user"),
            ("message", "system"),
        ]
        newest = page.data[0]
        assert newest.id.startswith("msg_") and newest.status == "completed"
        assert [c.type for c in newest.content] == ["input_text", "input_image"]
        assert newest.content[0].text == "look at this"
        assert newest.content[1].image_url == "https://example.test/cat.png"
        assert newest.content[1].detail == "low"
        assert page.data[1].content[0].type == "output_text"
        assert page.data[1].content[0].text == "first answer"
        assert page.first_id == newest.id and page.last_id == page.data[-1].id and page.has_more is False

        # One item a page, oldest first: the SDK follows `after` = last_id while has_more.
        pages = sdk.responses.input_items.list(made.id, limit=1, order="asc")
        assert len(pages.data) == 1 and pages.has_more is True
        texts = [item.content[0].text for item in pages]  # auto-pagination
        assert texts == ["Be brief.", "first question", "first answer", "look at this"]

        # A plain string input is one user message.
        single = sdk.responses.create(model="hermes-agent", input="just this")
        (item,) = sdk.responses.input_items.list(single.id).data
        assert (item.role, item.content[0].type, item.content[0].text) == ("user", "input_text", "just this")

        # Chained: only this request's own input, not the earlier response's.
        chained = sdk.responses.create(model="hermes-agent", input="and then", previous_response_id=single.id)
        assert [i.content[0].text for i in sdk.responses.input_items.list(chained.id).data] == ["and then"]

        with pytest.raises(openai.NotFoundError):
            sdk.responses.input_items.list("resp_unknown")

    await asyncio.to_thread(run)


async def test_input_items_cursors_and_bad_query(server: Server) -> None:
    made = await call(server, "POST", "/v1/responses", {"model": "hermes-agent", "input": CONVERSATION})
    rid = made.json["id"]
    listed = (await call(server, "GET", f"/v1/responses/{rid}/input_items?order=asc")).json
    ids = [item["id"] for item in listed["data"]]
    assert len(ids) == len(set(ids)) == 4
    after = (
        await call(server, "GET", f"/v1/responses/{rid}/input_items?order=asc&after={ids[0]}&limit=2")
    ).json
    assert [i["id"] for i in after["data"]] == ids[1:3] and after["has_more"] is True
    before = (
        await call(server, "GET", f"/v1/responses/{rid}/input_items?order=asc&before={ids[3]}&limit=2")
    ).json
    assert [i["id"] for i in before["data"]] == ids[1:3] and before["has_more"] is True
    for query, param in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=x", "limit"),
        ("order=up", "order"),
        ("after=msg_nope", "after"),
    ]:
        reply = await call(server, "GET", f"/v1/responses/{rid}/input_items?{query}")
        assert assert_error(reply, 400, "invalid_value")["param"] == param


async def test_cancel_stops_a_streamed_response_in_progress(server: Server) -> None:
    def run() -> None:
        sdk = client(server)
        seen: list[Any] = []
        ended = threading.Event()

        def read() -> None:
            stream = sdk.responses.create(
                model="hermes-agent", input='[[tool terminal {"command": "sleep 60"}]]', stream=True
            )
            for event in stream:
                seen.append(event)
            ended.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        eventually_sync(
            lambda: any(e.type == "response.output_item.added" for e in seen), what="the tool started"
        )
        rid = seen[0].response.id
        assert sdk.responses.retrieve(rid).status == "in_progress"

        cancelled = sdk.responses.cancel(rid)
        assert cancelled.id == rid and cancelled.status == "cancelled"
        assert ended.wait(scaled(30)), "the stream did not end"
        last = seen[-1]
        assert last.type == "response.incomplete" and last.response.status == "cancelled"
        assert sdk.responses.retrieve(rid).status == "cancelled"
        # Cancelling again answers the same final object.
        assert sdk.responses.cancel(rid).status == "cancelled"

        # The session goes on: the next turn runs normally.
        follow = sdk.responses.create(model="hermes-agent", input="after the stop", previous_response_id=rid)
        assert follow.status == "completed" and follow.output_text == "You said: after the stop"

    await asyncio.to_thread(run)


async def test_cancel_of_a_finished_or_unknown_response(server: Server) -> None:
    def run() -> None:
        sdk = client(server)
        done = sdk.responses.create(model="hermes-agent", input="finished")
        with pytest.raises(openai.BadRequestError) as caught:
            sdk.responses.cancel(done.id)
        assert caught.value.status_code == 400
        assert "Cannot cancel a completed response." in str(caught.value)
        assert sdk.responses.retrieve(done.id).status == "completed"  # unchanged
        with pytest.raises(openai.NotFoundError):
            sdk.responses.cancel("resp_unknown")

    await asyncio.to_thread(run)


async def test_another_key_cannot_list_or_cancel(make_server: object) -> None:
    key_a, key_b = "key-a-" + "q" * 20, "key-b-" + "z" * 20
    srv: Server = make_server(f'[api_server]\nkeys = ["{key_a}", "{key_b}"]\n')  # type: ignore[operator]
    made = await call(srv, "POST", "/v1/responses", {"input": "mine"}, auth=f"Bearer {key_a}")
    rid = made.json["id"]
    assert (await call(srv, "GET", f"/v1/responses/{rid}/input_items", auth=f"Bearer {key_a}")).status == 200
    other = f"Bearer {key_b}"
    assert_error(
        await call(srv, "GET", f"/v1/responses/{rid}/input_items", auth=other), 404, "response_not_found"
    )
    assert_error(
        await call(srv, "POST", f"/v1/responses/{rid}/cancel", auth=other), 404, "response_not_found"
    )
