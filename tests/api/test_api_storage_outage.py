"""Storage failing in the middle of a turn, seen from the API: the answer names storage as the
cause (``error_code: storage_error``) with the storage's own message, and the server goes on
(docs/reference/api-server.md#chat-response, #run-lifecycle)."""

from __future__ import annotations

from pathlib import Path

from tests.api.api_helpers import call, start_server
from tests.api.test_api_runs import events, start_run, wait_status
from tests.cli.cli_helpers import write_distribution

OUTAGE_STORE = '''
"""A memory storage whose assistant rows fail while a marker file exists (tests only)."""
from pathlib import Path

from hermes_core import StorageSpec, StorageUnavailable, hookimpl
from hermes_core.memory_storage import MemoryStorage


class OutageStorage(MemoryStorage):
    def __init__(self, path):
        super().__init__()
        self.marker = Path(path).with_name("storage-down")

    async def append_rows(self, session_id, rows):
        if self.marker.exists() and any(row.role == "assistant" for row in rows):
            raise StorageUnavailable(
                "PostgreSQL at db.internal:5432/hermes is unavailable: server closed the connection"
            )
        return await super().append_rows(session_id, rows)


@hookimpl
def hermes_storage_backends():
    return StorageSpec(name="outage", factory=lambda path, **_: OutageStorage(path))
'''
MESSAGE = "PostgreSQL at db.internal:5432/hermes is unavailable: server closed the connection"


async def test_a_storage_outage_mid_turn_is_reported_as_storage_on_every_api(tmp_path: Path) -> None:
    dist = write_distribution(
        tmp_path / "dist", "outagestore", {"outagestore": OUTAGE_STORE}, {"outage": "outagestore"}
    )
    home = tmp_path / "home"
    config = 'model = "mock:echo"\n[agent]\nprovider_retries = 0\n[storage]\nbackend = "outage"\n'
    server = start_server(home, config=config, env={"PYTHONPATH": str(dist)})
    try:
        (home / "storage-down").write_text("1")
        chat = await call(
            server,
            "POST",
            "/v1/chat/completions",
            {"model": "hermes-agent", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert chat.status == 200, chat.text
        hermes = chat.json["hermes"]
        assert chat.json["choices"][0]["finish_reason"] == "error"
        assert (hermes["failed"], hermes["error_code"], hermes["error"]) == (True, "storage_error", MESSAGE)

        reply = await call(server, "POST", "/v1/responses", {"model": "hermes-agent", "input": "hi"})
        assert reply.json["status"] == "failed", reply.text
        assert reply.json["error"] == {"code": "storage_error", "message": MESSAGE}

        run = await start_run(server, {"input": "hi"})
        failed = await wait_status(server, run["run_id"], "failed")
        assert (failed["error_code"], failed["error"]) == ("storage_error", MESSAGE)
        assert [f["data"]["event"] for f in await events(server, run["run_id"])][-1] == "run.failed"

        (home / "storage-down").unlink()  # the database is back: the next turn is whole again
        again = await call(
            server,
            "POST",
            "/v1/chat/completions",
            {"model": "hermes-agent", "messages": [{"role": "user", "content": "ok?"}]},
        )
        assert again.json["choices"][0]["message"]["content"] == "You said: ok?"
        assert "Traceback" not in "".join(server.log)
    finally:
        server.stop()
