"""The servers announce the export's ``schema_version`` and ``sha256`` at run time, in frames the
export describes: ``gateway.ready`` (TUI), ``GET /v1/capabilities`` (API) and ACP ``initialize``
(``_meta.hermes.schema``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.api.api_helpers import call, start_server
from tests.cli.cli_helpers import HERMES, clean_env
from tests.schema.conftest import Exported
from tests.timing import scaled
from tests.tui.client import TuiProcess, write_config


def _stamp(exported: Exported) -> dict[str, str]:
    return {"version": exported.manifest["schema_version"], "sha256": exported.manifest["sha256"]}


def test_gateway_ready_and_a_turn_follow_the_tui_export(exported: Exported, tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home)
    proc = TuiProcess(home, cwd=home)
    try:
        ready = proc.wait_event("", "gateway.ready", timeout=scaled(20))
        assert ready["payload"]["schema"] == _stamp(exported)
        exported.validator("tui", "ReadyPayload").validate(ready["payload"])
        sid = proc.create()
        done = proc.turn(sid, "hello schema", timeout=scaled(20))
        assert done["status"] == "complete"
        doc = exported.documents["tui"]
        envelope = exported.validator("tui", "EventParams")
        checked = set()
        for frame in proc.events():
            envelope.validate(frame)
            event = doc["x-events"][frame["type"]]  # every event sent is in the export
            ref = event["schema"].get("$ref")
            if ref is not None:
                exported.validator("tui", ref.rsplit("/", 1)[1]).validate(frame.get("payload", {}))
                checked.add(frame["type"])
        assert {"gateway.ready", "message.delta", "message.complete"} <= checked
    finally:
        proc.close()


async def test_capabilities_follow_the_api_export(exported: Exported, tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", config="[titles]\nrefine = false\n")
    try:
        caps = (await call(server, "GET", "/v1/capabilities")).json
    finally:
        server.stop()
    assert caps["schema"] == _stamp(exported)
    exported.validator("api", "Capabilities").validate(caps)


async def test_acp_initialize_carries_the_stamp_in_meta(exported: Exported, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('model = "mock:script"\n', encoding="utf-8")
    process = await asyncio.create_subprocess_exec(
        HERMES,
        "acp",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=clean_env(home),
        cwd=str(tmp_path),
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        process.stdin.write(json.dumps(request).encode() + b"\n")
        await process.stdin.drain()
        line = await asyncio.wait_for(process.stdout.readline(), scaled(30))
        result: dict[str, Any] = json.loads(line)["result"]
    finally:
        process.kill()
        await process.wait()
    assert result["_meta"] == {"hermes": {"schema": _stamp(exported)}}
    exported.validator("acp", "InitializeResponse").validate(result)
    exported.validator("acp", "HermesInitializeMeta").validate(result["_meta"])
