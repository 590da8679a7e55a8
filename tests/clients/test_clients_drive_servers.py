"""The generated Python client drives the real servers on the mock provider: ``hermes tui`` over
stdio and ``hermes api`` on loopback (docs/integrating.md, "Generated clients").

Every frame is read through the generated models, so a server that sent something off its own
export would fail these tests in the client's validation, as it would fail a host.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_client import SCHEMA_SHA256, SCHEMA_VERSION, ApiClient, ApiError, RpcError, TuiClient
from hermes_client import api_models as am
from hermes_client import tui_models as tm
from tests.api.api_helpers import start_server
from tests.api.conftest import BASE_CONFIG
from tests.timing import scaled
from tests.tui.client import HERMES, hermes_env, write_config

GUARDED_TOOL = '[[tool terminal {"command":"echo hermes-guard-test"}]]'


async def _until_complete(client: TuiClient, sid: str) -> tuple[list[tm.TextDelta], tm.MessageComplete]:
    deltas: list[tm.TextDelta] = []
    while True:
        event = await client.next_event(session_id=sid, timeout=scaled(30))
        if isinstance(event.payload, tm.TextDelta) and event.type == "message.delta":
            deltas.append(event.payload)
        if event.type == "message.complete":
            assert isinstance(event.payload, tm.MessageComplete)
            return deltas, event.payload


async def test_the_python_client_drives_hermes_tui_over_stdio(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home)
    with (tmp_path / "stderr.log").open("w") as stderr:
        client = await TuiClient.spawn([HERMES, "tui"], env=hermes_env(home), cwd=str(home), stderr=stderr)
    async with client:
        assert client.ready is not None
        assert (client.ready.schema_.version, client.ready.schema_.sha256) == (SCHEMA_VERSION, SCHEMA_SHA256)

        created = await client.session_create(tm.SessionCreateParams(cols=100, title="typed client"))
        assert isinstance(created, tm.Snapshot) and created.message_count == 0
        sid = created.session_id

        submitted = await client.prompt_submit(
            tm.PromptSubmitParams(session_id=sid, text="hello typed client")
        )
        assert submitted.status == "streaming"
        deltas, done = await _until_complete(client, sid)
        assert done.status == "complete" and "hello typed client" in done.text
        assert "".join(d.text for d in deltas) == done.text

        # An approval round trip: the request arrives as its typed payload, the answer resolves it.
        await client.prompt_submit(tm.PromptSubmitParams(session_id=sid, text=GUARDED_TOOL))
        asked = await client.next_event("approval.request", session_id=sid, timeout=scaled(30))
        assert isinstance(asked.payload, tm.ApprovalRequestPayload)
        assert "hermes-guard-test" in asked.payload.command and "once" in asked.payload.choices
        answered = await client.approval_respond(
            tm.ApprovalRespondParams(session_id=sid, request_id=asked.payload.request_id, choice="once")
        )
        assert answered == tm.ApprovalResult(resolved=1)
        tool = await client.next_event("tool.complete", session_id=sid, timeout=scaled(30))
        assert isinstance(tool.payload, tm.ToolComplete) and "hermes-guard-test" in tool.payload.result
        _deltas, done = await _until_complete(client, sid)
        assert done.status == "complete"

        history = await client.session_history(tm.SessionHistoryParams(session_id=sid))
        assert [m.role for m in history.messages][:2] == ["user", "assistant"]
        assert history.messages[0].text == "hello typed client"

        # Bad params still get the gateway's -32602 through the client.
        with pytest.raises(RpcError) as bad:
            await client.call("session.create", {"cols": "wide"})
        assert bad.value.code == -32602 and bad.value.data == {"param": "cols", "expected": "integer"}
        closed = await client.session_close(tm.SessionCloseParams(session_id=sid))
        assert closed.closed is True
    assert client.process is not None and client.process.returncode == 0


async def test_the_python_client_drives_hermes_api(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", config=BASE_CONFIG)
    try:
        async with ApiClient(server.base, server.key) as client:
            caps = await client.get_capabilities()
            assert isinstance(caps, am.Capabilities)
            assert (caps.schema_.version, caps.schema_.sha256) == (SCHEMA_VERSION, SCHEMA_SHA256)

            # Chat Completions, streamed: every chunk is a ChatCompletionChunk.
            request = am.ChatCompletionRequest(
                messages=[am.ChatMessage(role="user", content="stream me please")], stream=True
            )
            chunks = [e async for e in client.stream("createChatCompletion", request)]
            assert chunks and all(isinstance(e.data, am.ChatCompletionChunk) for e in chunks)
            # The delta is typed: its text is an attribute, not a dict lookup.
            text = "".join(c.delta.content or "" for e in chunks for c in e.data.choices)
            assert "stream me please" in text

            # A run that asks for approval: its events arrive typed, the answer resolves it.
            accepted = await client.create_run(am.RunCreateRequest(input=GUARDED_TOOL))
            assert isinstance(accepted, am.RunAccepted)
            seen: list[str] = []
            async for event in client.stream("streamRunEvents", run_id=accepted.run_id):
                # Each run event arrives as its own model (the export names one per event).
                assert type(event.data).__name__ == "RunEvent" + "".join(
                    part.capitalize() for part in event.name.replace("_", ".").split(".")
                ), (event.name, type(event.data))
                seen.append(event.name)
                if event.name == "approval.request":
                    assert isinstance(event.data, am.RunEventApprovalRequest)
                    request_id = event.data.request_id
                    resolved = await client.respond_run_approval(
                        accepted.run_id, am.ApprovalRequest(choice="once", request_id=request_id)
                    )
                    assert isinstance(resolved, am.ApprovalResolved)
            assert seen[0] == "run.started" and seen[-1] == "run.completed"
            assert seen.index("approval.request") < seen.index("approval.responded")
            finished = await client.call("getRun", run_id=accepted.run_id)
            assert isinstance(finished, am.RunStatus) and finished.status == "completed"

            # An error answer is an ApiError with the server's code.
            with pytest.raises(ApiError) as refused:
                await client.call(
                    "respondRunApproval", am.ApprovalRequest(choice="maybe"), run_id=accepted.run_id
                )
            assert refused.value.status in (400, 409)
    finally:
        server.stop()
