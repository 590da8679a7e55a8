"""Requests racing on live ACP sessions crash nothing (docs/reference/acp.md#json-rpc).

A seeded generator sends 1,500 requests and notifications without waiting for answers, most of
them on a handful of real sessions: prompts (some calling tools on odd paths), cancels, loads,
resumes, forks, closes, mode, model and option changes, listings, and now and then an odd value.
What the agent asks the editor (permissions, files) is refused, as an editor that says no would.

Every request gets exactly one response, none is an internal error (-32603), stdout holds only
frames, nothing is logged with a traceback, and a new session still answers a prompt at the end.
The seed is in every failure message; ``HERMES_ACP_FUZZ_SEED=N`` runs another.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import string
from pathlib import Path
from typing import Any

from tests.acp.conftest import Home

REQUESTS = 1_500
BATCH = 100
SEED = int(os.environ.get("HERMES_ACP_FUZZ_SEED", "20261208"))

ON_A_SESSION = {
    "session/prompt": 8, "session/load": 3, "session/resume": 3, "session/close": 2, "session/fork": 2,
    "session/set_mode": 2, "session/set_model": 2, "session/set_config_option": 2,
}  # fmt: skip
ODD: list[Any] = [None, True, 3.5, -1, "", "\u2028", [], [1, "x"], {"a": {}}, "x" * 300]
PATHS = ["~nosuchuser_hermes/notes.txt", "/" + "y" * 300, "../../etc/hostname", "notes.txt", "a b/c.txt"]


def _text(rng: random.Random) -> str:
    return " ".join(
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randrange(1, 8))) for _ in range(3)
    )


def _prompt(rng: random.Random) -> list[dict[str, Any]]:
    kind = rng.randrange(4)
    if kind == 0:
        text = f'[[tool read_file {{"path": {json.dumps(rng.choice(PATHS))}}}]]'
    elif kind == 1:
        text = f"[[tool write_file {json.dumps({'path': rng.choice(PATHS), 'content': 'x'})}]]"
    else:
        text = _text(rng)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if rng.random() < 0.1:
        blocks.append({"type": "resource_link", "uri": "file://" + rng.choice(PATHS), "name": "n"})
    return blocks


def _params(rng: random.Random, method: str, sessions: list[str], cwd: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if method in ON_A_SESSION:
        params["sessionId"] = rng.choice(sessions) if rng.random() < 0.9 else rng.choice(ODD)
    if method == "session/prompt":
        params["prompt"] = _prompt(rng)
    elif method in ("session/load", "session/resume", "session/fork"):
        params["cwd"], params["mcpServers"] = cwd, []
    elif method == "session/set_mode":
        params["modeId"] = rng.choice(["default", "acceptEdits", "plan", "bypassPermissions", "nope"])
    elif method == "session/set_model":
        params["modelId"] = rng.choice(["mock:script", "mock:echo", "nope:nothing", ""])
    elif method == "session/set_config_option":
        params["configId"], params["value"] = rng.choice(
            [("mode", "plan"), ("model", "mock:echo"), ("thought_level", "high"), ("nope", "x")]
        )
    elif method == "session/new":
        params["cwd"], params["mcpServers"] = (cwd if rng.random() < 0.8 else rng.choice(PATHS)), []
    if params and rng.random() < 0.15:
        params[rng.choice([*params, "cursor"])] = rng.choice(ODD)
    return params


async def test_racing_requests_on_live_sessions_crash_nothing(raw: Any, home: Home, tmp_path: Path) -> None:
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("wb") as stderr:
        agent = await raw(stderr=stderr)
        await agent.request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        cwd = str(home.workspace)
        sessions = []
        for n in range(5):
            created = await agent.request(f"new{n}", "session/new", {"cwd": cwd, "mcpServers": []})
            sessions.append(created["result"]["sessionId"])
        responses: dict[Any, list[dict[str, Any]]] = {}
        lines: list[bytes] = []
        ended = asyncio.Event()
        arrived = asyncio.Event()

        async def read() -> None:
            assert agent.process.stdout is not None
            while line := await agent.process.stdout.readline():
                lines.append(line)
                frame = json.loads(line)
                if "method" in frame and "id" in frame:  # the agent asks the editor: refuse
                    answer: dict[str, Any] = {"jsonrpc": "2.0", "id": frame["id"]}
                    if frame["method"] == "session/request_permission":
                        answer["result"] = {"outcome": {"outcome": "cancelled"}}
                    else:
                        answer["error"] = {"code": -32601, "message": "not offered"}
                    await agent.send(answer)
                elif "method" not in frame:
                    responses.setdefault(frame.get("id"), []).append(frame)
                    arrived.set()
            ended.set()

        reader = asyncio.create_task(read())
        rng = random.Random(SEED)
        sent: dict[int, str] = {}
        names, weights = list(ON_A_SESSION), list(ON_A_SESSION.values())
        try:
            for index in range(REQUESTS):
                roll = rng.random()
                if roll < 0.08:
                    method = rng.choice(["session/new", "session/list"])
                elif roll < 0.18:
                    session_id = rng.choice(sessions)
                    await agent.send(
                        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
                    )
                    continue
                else:
                    method = rng.choices(names, weights)[0]
                params = _params(rng, method, sessions, cwd)
                sent[index + 1000] = method
                await agent.send({"jsonrpc": "2.0", "id": index + 1000, "method": method, "params": params})
                if index % BATCH == BATCH - 1:
                    await _wait(lambda: all(i in responses for i in sent), arrived, 60)

            if not await _wait(lambda: all(i in responses for i in sent), arrived, 90):
                unanswered = sorted({sent[i] for i in sent if i not in responses})
                raise AssertionError(
                    f"seed {SEED}: unanswered {unanswered}; {stderr_path.read_text()[-2000:]}"
                )
            twice = [i for i in sent if len(responses[i]) > 1]
            assert twice == [], f"seed {SEED}: answered twice: {[sent[i] for i in twice[:5]]}"
            internal = [
                (sent[i], responses[i][0]["error"].get("message"))
                for i in sent
                if responses[i][0].get("error", {}).get("code") == -32603
            ]
            assert internal == [], f"seed {SEED}: internal errors {internal[:5]}"
            assert agent.process.returncode is None, f"seed {SEED}"

            await agent.send(
                {
                    "jsonrpc": "2.0",
                    "id": "last-new",
                    "method": "session/new",
                    "params": {"cwd": cwd, "mcpServers": []},
                }
            )
            assert await _wait(lambda: "last-new" in responses, arrived, 30)
            fresh = responses["last-new"][0]["result"]["sessionId"]
            prompt = {"sessionId": fresh, "prompt": [{"type": "text", "text": "after the race"}]}
            await agent.send(
                {"jsonrpc": "2.0", "id": "last-prompt", "method": "session/prompt", "params": prompt}
            )
            assert await _wait(lambda: "last-prompt" in responses, arrived, 60)
            assert responses["last-prompt"][0]["result"] == {"stopReason": "end_turn"}, f"seed {SEED}"
        finally:
            assert agent.process.stdin is not None
            agent.process.stdin.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(ended.wait(), 60)
            reader.cancel()
    assert all(_is_frame(line) for line in lines), f"seed {SEED}: stdout held a line that is not a frame"
    text = stderr_path.read_text()
    assert "Traceback" not in text, f"seed {SEED}: {text[-3000:]}"


async def _wait(done: Any, arrived: asyncio.Event, timeout: float) -> bool:
    """Wait until ``done()`` holds, waking on each response; False after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not done():
        left = end - loop.time()
        if left <= 0:
            return False
        arrived.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(arrived.wait(), left)
    return True


def _is_frame(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False
