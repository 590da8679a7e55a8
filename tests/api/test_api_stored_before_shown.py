"""A numbered run event or background-response event goes out only once the event log has
stored the core events behind it (docs/reference/api-server.md#resume-after-a-restart): the API
server in this process on a real SQLite file whose log writes are held back (a slow disk), read
over real HTTP, so a client's ``Last-Event-ID`` / ``starting_after`` never names an event a
``kill -9`` could number again."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from hermes_core import Kernel, TurnCompleted
from hermes_core.event_log.codec import decode_events, split_chunk
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import delta, openai_reply
from tests.timing import eventually, scaled

KEY = "sk-stored-before-shown-0123456789"
UP_KEY = "sk-upstream-stored-0123456789ab"
PATH = "/v1/chat/completions"
QUESTION = "a question whose end is held back"
DELTAS = ("alpha ", "beta ")


class GatedUpstream:
    """The fake OpenAI upstream: the reply's deltas at once, its finish once :attr:`finish` is
    set (so the test can hold the log's disk between the deltas and the turn's end)."""

    def __init__(self, up: FakeUpstream) -> None:
        self.up = up
        self.finish = asyncio.Event()
        up.on("POST", PATH, self.handle)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = self.up.requests[-1].body
        assert request.headers.get("Authorization") == f"Bearer {UP_KEY}"
        assert body["model"] == "gpt-stored" and body["stream"] is True
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        assert QUESTION in str(users[-1]), users
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for text in DELTAS:
            await response.write(delta(content=text))
        await self.finish.wait()
        for frame in openai_reply("")[1:]:
            await response.write(frame)
        await response.write_eof()
        return response


@dataclass
class Disk:
    """The event log's writes: those holding a turn's end wait while :attr:`open` is clear."""

    open: asyncio.Event = field(default_factory=asyncio.Event)
    held_ends: list[int] = field(default_factory=list)


def turn_ends(writes: Any) -> list[int]:
    """The numbers of the turn ends in a batch of chunk writes."""
    found = []
    for write in writes:
        _header, body = split_chunk(write.chunk.data)
        for event in decode_events(body, write.session_id, write.chunk.first_seq):
            if isinstance(event, TurnCompleted):
                found.append(event.seq)
    return found


@dataclass
class Api:
    kernel: Kernel
    state: Any
    base: str
    disk: Disk
    upstream: GatedUpstream
    http: aiohttp.ClientSession


@asynccontextmanager
async def api_in_process(tmp_path: Path) -> AsyncIterator[Api]:
    """The API server of ``hermes api`` in this process, on a real SQLite file and loopback
    HTTP, talking to the gated upstream through the ``openai`` provider."""
    from hermes_api_server.app import build_app
    from hermes_api_server.bus import build_bus
    from hermes_api_server.keys import KeyRing
    from hermes_api_server.runs_control import on_control
    from hermes_api_server.server import _build_state
    from hermes_api_server.settings import ApiSettings

    async with FakeUpstream() as up:
        upstream = GatedUpstream(up)
        kernel = Kernel.create(
            entry_points=["openai", "mock", "sqlite", "api"],
            strict=True,
            settings={
                "model": "openai:gpt-stored",
                "providers": {"openai": {"api_key": UP_KEY, "base_url": f"{up.url}/v1"}},
                "storage": {"backend": "sqlite", "path": str(tmp_path / "hermes.sqlite3")},
                "titles": {"refine": False},
                "agent": {"provider_retries": 0},
            },
        )
        async with kernel.running():
            storage: Any = kernel.storage
            real_write = storage.write_event_chunks
            disk = Disk()
            disk.open.set()

            async def slow_disk(writes: Any) -> Any:
                ends = turn_ends(writes)
                if ends and not disk.open.is_set():
                    disk.held_ends.extend(ends)
                    await disk.open.wait()
                return await real_write(writes)

            storage.write_event_chunks = slow_disk
            settings = ApiSettings.model_validate({"key": KEY})
            keyring = KeyRing((KEY.encode(),), "configured")
            state = await _build_state(kernel, settings, keyring, tmp_path, None, shared_bus=False)
            bus = build_bus(kernel, settings)
            await bus.start(functools.partial(on_control, state), state.runs)
            state.runs.bus = bus
            runner = web.AppRunner(build_app(state))
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = runner.addresses[0][1]
            timeout = aiohttp.ClientTimeout(total=scaled(60))
            headers = {"Authorization": f"Bearer {KEY}"}
            async with aiohttp.ClientSession(headers=headers, timeout=timeout) as http:
                try:
                    yield Api(kernel, state, f"http://127.0.0.1:{port}", disk, upstream, http)
                finally:
                    disk.open.set()
                    upstream.finish.set()
                    await state.runs.close()
                    await runner.cleanup()
                    await state.store.close()


async def read_sse(resp: aiohttp.ClientResponse, out: list[dict[str, Any]]) -> None:
    """Append the data of every SSE frame as it arrives."""
    buffer = ""
    async for chunk in resp.content.iter_any():
        buffer += chunk.decode()
        *frames, buffer = buffer.split("\n\n")
        for frame in frames:
            for line in frame.splitlines():
                if line.startswith("data: "):
                    out.append(json.loads(line[6:]))


async def hold_the_turns_end(api: Api, got: list[dict[str, Any]], key: str, delta_name: str) -> int:
    """Once the client has the reply's deltas, hold the log's disk, let the model finish, and
    return the number of the turn's end once its write waits for the disk."""

    def deltas() -> bool:
        return "".join(str(d.get("delta")) for d in got if d.get(key) == delta_name) == "".join(DELTAS)

    await eventually(deltas, what="the reply's deltas on the stream")
    api.disk.open.clear()
    api.upstream.finish.set()
    ends = await eventually(lambda: list(api.disk.held_ends), what="the turn's end to wait for the disk")
    # A pass of the event loop for a relay that would show what it has at once (it had, when
    # the write was asked for: the writer is 50 ms behind the turn unless someone waits).
    await asyncio.sleep(0.05)
    return ends[-1]


async def test_a_runs_terminal_event_waits_for_the_turns_end_to_be_stored(tmp_path: Path) -> None:
    async with api_in_process(tmp_path) as api:
        created = await api.http.post(f"{api.base}/v1/runs", json={"input": QUESTION})
        assert created.status == 202, await created.text()
        run_id = (await created.json())["run_id"]
        got: list[dict[str, Any]] = []
        async with api.http.get(f"{api.base}/v1/runs/{run_id}/events") as resp:
            assert resp.status == 200
            reader = asyncio.create_task(read_sse(resp, got))
            end = await hold_the_turns_end(api, got, "event", "message.delta")
            session_id = (await (await api.http.get(f"{api.base}/v1/runs/{run_id}")).json())["session_id"]
            stored = api.kernel.events.stored(session_id)
            assert stored is not None and stored < end
            # The turn ended, its end is not stored: nobody has been told how the run ended
            # (a kill -9 now would end it as interrupted under the seq shown).
            assert [d["event"] for d in got] == ["run.started", "message.delta", "message.delta"], got
            status = await (await api.http.get(f"{api.base}/v1/runs/{run_id}")).json()
            assert status["status"] == "running", status
            api.disk.open.set()
            await asyncio.wait_for(reader, scaled(30))
        assert got[-1]["event"] == "run.completed" and got[-1]["output"] == "".join(DELTAS)
        assert [int(d["seq"]) for d in got] == list(range(1, len(got) + 1))


async def test_a_background_responses_end_waits_for_the_turns_end_to_be_stored(tmp_path: Path) -> None:
    async with api_in_process(tmp_path) as api:
        body = {"model": "hermes-agent", "input": QUESTION, "background": True}
        created = await api.http.post(f"{api.base}/v1/responses", json=body)
        assert created.status == 200, await created.text()
        response_id = (await created.json())["id"]
        got: list[dict[str, Any]] = []
        async with api.http.get(f"{api.base}/v1/responses/{response_id}?stream=true") as resp:
            assert resp.status == 200
            reader = asyncio.create_task(read_sse(resp, got))
            await hold_the_turns_end(api, got, "type", "response.output_text.delta")
            kinds = [d["type"] for d in got]
            assert kinds[-1] == "response.output_text.delta" and "response.completed" not in kinds, kinds
            api.disk.open.set()
            await asyncio.wait_for(reader, scaled(30))
        assert got[-1]["type"] == "response.completed"
        assert [d["sequence_number"] for d in got] == list(range(len(got)))


async def test_run_stopping_is_shown_once_its_record_is_stored(tmp_path: Path) -> None:
    """``run.stopping`` has no core event behind it: its seq lives in the run's record, which is
    written before the event goes out (else a restart numbers the run's end with it)."""
    async with api_in_process(tmp_path) as api:
        created = await api.http.post(f"{api.base}/v1/runs", json={"input": QUESTION})
        run_id = (await created.json())["run_id"]
        got: list[dict[str, Any]] = []
        store = api.state.store
        real_put = store.put_run
        records = asyncio.Event()
        records.set()
        held: list[str] = []

        async def slow_records(run: str, who: str, status: dict[str, Any], terminal: bool) -> Any:
            if not records.is_set():
                held.append(str(status.get("status")))
                await records.wait()
            return await real_put(run, who, status, terminal)

        store.put_run = slow_records
        async with api.http.get(f"{api.base}/v1/runs/{run_id}/events") as resp:
            reader = asyncio.create_task(read_sse(resp, got))

            def deltas() -> bool:
                return sum(1 for d in got if d["event"] == "message.delta") == len(DELTAS)

            await eventually(deltas, what="the reply's deltas on the stream")
            records.clear()
            stop = asyncio.create_task(api.http.post(f"{api.base}/v1/runs/{run_id}/stop"))
            await eventually(lambda: "stopping" in held, what="the stopping record to wait")
            await asyncio.sleep(0.05)
            assert "run.stopping" not in [d["event"] for d in got], got
            records.set()
            assert (await stop).status == 200
            await asyncio.wait_for(reader, scaled(30))
        events = [d["event"] for d in got]
        assert events[-2:] == ["run.stopping", "run.cancelled"], events
        assert [int(d["seq"]) for d in got] == list(range(1, len(got) + 1))
        stored = await store.get_run(run_id)
        assert stored is not None
        assert stored[1]["log"]["stopping"][0][0] == events.index("run.stopping") + 1


async def another_writer(api: Api, session_id: str) -> None:
    """Append a chunk to the session's log as another process would: the held write of this
    one then finds another end, and its log stops."""
    from hermes_core import ChunkWrite
    from hermes_core.event_log.codec import ChunkHeader, encode_events, make_chunk

    storage: Any = api.kernel.storage
    last = await storage.last_event_chunk(session_id)
    end = last.last_seq if last is not None else 0
    intruder = make_chunk(end + 1, end + 1, ChunkHeader(end + 1), encode_events([]))
    assert await storage.write_event_chunks([ChunkWrite(session_id, intruder, end)]) == [True]


async def test_a_run_whose_log_stops_before_its_end_is_stored_fails_without_showing_it(
    tmp_path: Path,
) -> None:
    async with api_in_process(tmp_path) as api:
        created = await api.http.post(f"{api.base}/v1/runs", json={"input": QUESTION})
        assert created.status == 202, await created.text()
        run_id = (await created.json())["run_id"]
        got: list[dict[str, Any]] = []
        async with api.http.get(f"{api.base}/v1/runs/{run_id}/events") as resp:
            reader = asyncio.create_task(read_sse(resp, got))
            await hold_the_turns_end(api, got, "event", "message.delta")
            session_id = (await (await api.http.get(f"{api.base}/v1/runs/{run_id}")).json())["session_id"]
            await another_writer(api, session_id)
            api.disk.open.set()  # the held write finds another end: the log stops below the end
            await asyncio.wait_for(reader, scaled(30))
        events = [d["event"] for d in got]
        assert events == ["run.started", "message.delta", "message.delta", "run.failed"], got
        assert got[-1]["error_code"] == "storage_error", got[-1]
        assert [int(d["seq"]) for d in got] == list(range(1, len(got) + 1))


async def test_a_background_response_whose_log_stops_fails_without_showing_its_end(
    tmp_path: Path,
) -> None:
    async with api_in_process(tmp_path) as api:
        body = {"model": "hermes-agent", "input": QUESTION, "background": True}
        created = await api.http.post(f"{api.base}/v1/responses", json=body)
        assert created.status == 200, await created.text()
        response_id = (await created.json())["id"]
        session_id = created.headers["X-Hermes-Session-Id"]
        got: list[dict[str, Any]] = []
        async with api.http.get(f"{api.base}/v1/responses/{response_id}?stream=true") as resp:
            reader = asyncio.create_task(read_sse(resp, got))
            await hold_the_turns_end(api, got, "type", "response.output_text.delta")
            await another_writer(api, session_id)
            api.disk.open.set()
            await asyncio.wait_for(reader, scaled(30))
        kinds = [d["type"] for d in got]
        assert kinds[-1] == "response.failed", kinds
        assert "response.output_text.done" not in kinds, kinds  # the turn's end was not stored
        assert got[-1]["response"]["error"]["code"] == "storage_error", got[-1]
        assert [d["sequence_number"] for d in got] == list(range(len(got)))
        # Read again once settled, rebuilt from the log as after a restart (the held write never
        # landed; the other writer's chunk is not the turn's): the same stream, the same numbers.
        api.state.live_responses.pop(response_id, None)
        again: list[dict[str, Any]] = []
        async with api.http.get(f"{api.base}/v1/responses/{response_id}?stream=true") as resp:
            await asyncio.wait_for(read_sse(resp, again), scaled(30))
        assert [(d["type"], d["sequence_number"]) for d in again] == [
            (d["type"], d["sequence_number"]) for d in got
        ]


async def test_a_run_queued_behind_a_log_that_stopped_fails_instead_of_showing_unlogged_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run B waits behind run A in one session; storage refuses the log's writes and the log
    gives up during A. B's events then carry no number (nothing is logged): shown, they would
    get run seqs a restart could not rebuild, so B fails instead."""
    from hermes_core.event_log import writer

    monkeypatch.setattr(writer, "MAX_PENDING", 1)
    async with api_in_process(tmp_path) as api:
        created = await api.http.post(f"{api.base}/v1/runs", json={"input": QUESTION})
        assert created.status == 202, await created.text()
        first = (await created.json())["run_id"]
        got: list[dict[str, Any]] = []
        async with api.http.get(f"{api.base}/v1/runs/{first}/events") as resp:
            reader = asyncio.create_task(read_sse(resp, got))
            await eventually(
                lambda: sum(1 for d in got if d["event"] == "message.delta") == len(DELTAS),
                what="the first run's deltas",
            )
            session_id = (await (await api.http.get(f"{api.base}/v1/runs/{first}")).json())["session_id"]
            storage: Any = api.kernel.storage

            async def refused(writes: Any) -> Any:
                raise OSError("disk away")

            storage.write_event_chunks = refused
            queued = await api.http.post(
                f"{api.base}/v1/runs", json={"input": QUESTION, "session_id": session_id}
            )
            assert queued.status == 202, await queued.text()
            second = (await queued.json())["run_id"]
            api.upstream.finish.set()
            await asyncio.wait_for(reader, scaled(30))
        assert got[-1]["event"] == "run.failed" and got[-1]["error_code"] == "storage_error", got[-1]
        later: list[dict[str, Any]] = []
        async with api.http.get(f"{api.base}/v1/runs/{second}/events") as resp:
            await asyncio.wait_for(read_sse(resp, later), scaled(30))
        events = [d["event"] for d in later]
        assert events == ["run.started", "run.failed"], later
        assert later[-1]["error_code"] == "storage_error", later[-1]
