"""``hermes run`` keeps the title the model wrote for a new session.

The refined title is asked for after the first turn; a one-shot process must not exit before the
answer arrives, or the request is paid for and the answer thrown away.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiohttp import web

from tests.cli.cli_helpers import HERMES, clean_env, run_hermes
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import openai_reply

TITLE_INSTRUCTION = "You name conversations."


async def test_run_stores_the_title_the_openai_model_wrote(home: Path) -> None:
    async with FakeUpstream() as up:

        async def answer(request: web.Request) -> web.StreamResponse:
            body = await request.json()
            asks_title = TITLE_INSTRUCTION in body["messages"][0]["content"]
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            if asks_title:
                await asyncio.sleep(0.5)  # a model that takes a moment to answer
            for frame in openai_reply("Login bug fix" if asks_title else "I fixed it."):
                await response.write(frame)
            await response.write_eof()
            return response

        up.on("POST", "/v1/chat/completions", answer)
        env = clean_env(
            home,
            {"OPENAI_API_KEY": "sk-test-0123456789abcdef", "OPENAI_BASE_URL": f"{up.url}/v1"},
        )
        proc = await asyncio.create_subprocess_exec(
            HERMES,
            "run",
            "--model",
            "openai:gpt-4o",
            "--session",
            "s1",
            "Please fix the login bug in auth.py",
            env=env,
            cwd=str(home),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
        assert out.decode().strip() == "I fixed it."
        sent = [r.body for r in up.requests if r.path == "/v1/chat/completions"]
        assert len(sent) == 2 and TITLE_INSTRUCTION in json.dumps(sent[1]["messages"][0])
    listed = run_hermes(home, "sessions", "list")
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if line.startswith("s1 "))
    assert row.endswith("Login bug fix"), listed.stdout
