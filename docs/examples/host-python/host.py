"""A small host that drives ``hermes tui`` over stdio through scenario files.

It is an example of a host's own test suite (docs/integrating.md#testing-your-host-with-scenarios):
for each scenario it starts ``hermes tui`` with ``HERMES_MODEL=mock:scenario:PATH``, sends every
turn's prompt, answers each question with the answer the scenario expects, and prints one JSON
summary line per scenario: what a user of the host would have seen. Standard library only.

    python host.py [SCENARIO.toml ...]     (no argument: every shipped scenario)

Set ``HERMES`` to the command to run (default ``hermes``). The exit code is 1 when a turn did not
end with ``message.complete`` or the streamed text differs from the final text.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from typing import Any

HERMES = os.environ.get("HERMES", "hermes")
TIMEOUT_S = 30.0


class Gateway:
    """One ``hermes tui`` process: JSON-RPC requests out, responses and events in."""

    def __init__(self, scenario: str) -> None:
        env = dict(os.environ, HERMES_MODEL=f"mock:scenario:{scenario}")
        self.proc = subprocess.Popen(
            [HERMES, "tui"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
            encoding="utf-8",
        )
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.ids = itertools.count(1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.inbox.put(json.loads(line))
        self.inbox.put(None)

    def next(self) -> dict[str, Any]:
        frame = self.inbox.get(timeout=TIMEOUT_S)
        if frame is None:
            raise RuntimeError("hermes tui exited")
        return frame

    def send(self, method: str, **params: Any) -> int:
        request_id = next(self.ids)
        assert self.proc.stdin is not None
        self.proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + "\n"
        )
        self.proc.stdin.flush()
        return request_id

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # end of input: the gateway shuts down
        self.proc.wait(TIMEOUT_S)


def expected_answers(scenario: dict[str, Any], turn: dict[str, Any]) -> list[dict[str, str]]:
    """The answers a turn's questions get: its steps' own, then those of the subagents it starts."""
    answers = [e for step in turn["steps"] for e in step["expect"]]
    goals = [
        json.loads(call["arguments"]).get("goal")
        for step in turn["steps"]
        for call in step["tool_calls"]
        if call["name"] == "delegate_task"
    ]
    for sub in scenario["subagents"]:
        if sub["goal"] in goals:
            answers += [e for step in sub["steps"] for e in step["expect"]]
    return answers


def notice(kind: str, payload: dict[str, Any]) -> str | None:
    """What the host shows besides the reply: steers delivered, problems, titles, background results."""
    if kind == "status.update" and payload.get("kind") == "steer":
        return "steer delivered"
    if kind == "error":
        return f"problem: {payload['message']}"
    if kind == "session.title":
        return f"title: {payload['title']}"
    if kind == "background.complete":
        return f"background {payload['status']}: {payload['text']}"
    return None


def run_turn(
    gw: Gateway, session_id: str, turn: dict[str, Any], answers: list[dict[str, str]], title: str | None
) -> dict[str, Any]:
    """Send one prompt and follow its events to ``message.complete``; then send the turn's
    background prompt and wait for its result, and wait for the model-written ``title``."""
    gw.send("prompt.submit", session_id=session_id, text=turn["user"])
    streamed: list[str] = []
    tools: list[str] = []
    asked: list[str] = []
    notices: list[str] = []
    summary: dict[str, Any] = {}
    background = turn.get("background")
    while True:
        frame = gw.next()
        if frame.get("method") != "event":
            if "error" in frame:
                raise RuntimeError(f"request failed: {frame['error']}")
            continue
        kind, payload = frame["params"]["type"], frame["params"].get("payload") or {}
        shown = notice(kind, payload)
        if shown is not None:
            notices.append(shown)
        if kind == "message.delta":
            streamed.append(payload["text"])
        elif kind == "tool.start":
            tools.append(payload["name"])
        elif kind in ("approval.request", "clarify.request"):
            question = kind.split(".")[0]
            answer = next(a for a in answers if a["kind"] == question)
            answers.remove(answer)
            asked.append(f"{question}={answer['answer']}")
            if answer.get("steer"):
                gw.send("session.steer", session_id=session_id, text=answer["steer"])
            if question == "approval":
                gw.send(
                    "approval.respond",
                    session_id=session_id,
                    request_id=payload["request_id"],
                    choice=answer["answer"],
                )
            else:
                gw.send("clarify.respond", request_id=payload["request_id"], answer=answer["answer"])
        elif kind == "message.complete":
            summary = {
                "status": payload["status"],
                "text": payload["text"],
                # The final text replaces what streamed; it is the last segment's text.
                "streamed": "".join(streamed),
                "streamed_matches": "".join(streamed).endswith(payload["text"]),
                "tools": tools,
                "questions": asked,
            }
            if background:
                gw.send("prompt.background", session_id=session_id, text=background)
        if summary and (not background or kind == "background.complete"):
            background = None
            if title is None or f"title: {title}" in notices:
                return {**summary, "notices": notices}


def run_scenario(path: str) -> dict[str, Any]:
    shown = subprocess.run([HERMES, "scenario", "show", path], capture_output=True, text=True, check=True)
    scenario = json.loads(shown.stdout)
    gw = Gateway(path)
    try:
        while gw.next().get("params", {}).get("type") != "gateway.ready":
            pass
        request_id = gw.send("session.create")
        session_id = ""
        while not session_id:
            frame = gw.next()
            if frame.get("id") == request_id:
                session_id = frame["result"]["session_id"]
        turns = [
            run_turn(gw, session_id, t, expected_answers(scenario, t), scenario["title"] if i == 0 else None)
            for i, t in enumerate(scenario["turns"])
        ]
    finally:
        gw.close()
    return {"scenario": scenario["name"], "turns": turns}


def main(argv: list[str]) -> int:
    paths = (
        argv
        or subprocess.run(
            [HERMES, "scenario", "list"], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    ok = True
    for path in paths:
        summary = run_scenario(path)
        ok = ok and all(t["streamed_matches"] for t in summary["turns"])
        print(json.dumps(summary, sort_keys=True, ensure_ascii=False), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
