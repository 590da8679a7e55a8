"""A tool result with an image through ``hermes api`` runs: the run events show the caption and
the run completes (the image itself goes to the model only)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from tests.api.conftest import make_server  # noqa: F401
from tests.api.test_api_runs import events, start_run
from tests.mcp.test_surfaces import server_toml
from tests.timing import scaled


async def test_api_run_with_an_image_result_completes(make_server: Any) -> None:  # noqa: F811
    server = make_server('model = "mock:echo"\n' + server_toml(extra='include = ["picture"]\n'))
    deadline = time.monotonic() + scaled(40)
    while True:  # the server starts in the background: until then the tool is unknown
        run = await start_run(server, {"input": "[[tool mcp_tiny_picture {}]] go"})
        frames = [f["data"] for f in await events(server, run["run_id"])]
        completed = next(f for f in frames if f["event"] == "tool.completed")
        if not completed["error"] or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert completed["error"] is False, json.dumps(frames)
    assert frames[-1]["event"] == "run.completed" and frames[-1]["output"] == "Done: a tiny picture", frames[
        -1
    ]
