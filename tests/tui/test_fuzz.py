"""Thousands of requests on live sessions, sent without waiting, crash nothing.

Where ``test_robustness.py`` sends each method odd values one at a time, this test races them:
a seeded generator sends 3,000 requests in batches of 100 without waiting for answers, most of
them on a handful of real sessions (prompts, steers, interrupts, closes, resumes, branches,
compressions, titles, history reads, odd values). A session closed while a prompt, a title or a
branch on it is still at work is exactly the interleaving a user's fast double-click makes.

Every request gets exactly one response, none is an internal error (-32603), stdout holds only
frames, nothing is logged with a traceback, and the gateway still runs a turn at the end. The
seed is in every failure message; ``HERMES_TUI_FUZZ_SEED=N`` runs another.
"""

from __future__ import annotations

import json
import os
import random
import string
from pathlib import Path
from typing import Any

from tests.tui.client import TuiProcess

REQUESTS = 3_000
BATCH = 100
SEED = int(os.environ.get("HERMES_TUI_FUZZ_SEED", "20261208"))

# Methods that act on a session, and how often each is drawn (closes and resumes are common on
# purpose: they are what races the others).
ON_A_SESSION = {
    "prompt.submit": 8, "session.steer": 3, "session.interrupt": 4, "session.close": 2,
    "session.resume": 6, "session.branch": 2, "session.compress": 1, "session.title": 3,
    "session.history": 3, "session.usage": 2, "session.status": 2, "session.events.since": 2,
    "session.activate": 1, "prompt.background": 1, "clarify.respond": 1, "approval.respond": 1,
    "delegation.status": 1, "command.dispatch": 1, "slash.exec": 2, "process.stop": 1,
    "image.attach": 2, "terminal.resize": 1, "input.detect_drop": 2, "complete.path": 2,
}  # fmt: skip
ANYWHERE = ["session.create", "session.list", "session.active_list", "gateway.ping", "commands.catalog"]
ODD: list[Any] = [None, True, 3.5, -1, 0, "", "\u2028", [], [1, "x"], {"a": {}}, "x" * 300, 2**63]
# Paths a user may type or drop: another user's home, a name too long, spaces, a URL, a folder.
PATHS = [
    "~nosuchuser_hermes/x.png", "~/", "/" + "y" * 300, "/tmp/" + "z" * 300 + "/a.png", "./a b.png",
    "file:///etc/hostname", "../", "/etc/hostname and words", "relative.png", "/nonexistent.png", "",
]  # fmt: skip


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randrange(1, 8)))


def _text(rng: random.Random) -> str:
    return " ".join(_word(rng) for _ in range(3))


def _params(rng: random.Random, method: str, sessions: list[str]) -> dict[str, Any]:
    """Mostly sensible parameters for ``method``; now and then an odd value in one of them."""
    params: dict[str, Any] = {}
    if method in ON_A_SESSION:
        params["session_id"] = rng.choice(sessions) if rng.random() < 0.9 else rng.choice(ODD)
    if method in ("prompt.submit", "session.steer", "prompt.background"):
        params["text"] = _text(rng)
    elif method == "session.title":
        params["title"] = _text(rng)
    elif method == "slash.exec":
        params["command"] = rng.choice(["/help", "/usage", "/title fuzzed", "/model", "/undo", "/nope"])
    elif method == "command.dispatch":
        params["name"], params["arg"] = rng.choice(["help", "usage", "title", "undo"]), _text(rng)
    elif method == "session.events.since":
        params["last_seen"] = rng.choice([0, 1, 5, 10_000])
    elif method == "session.branch":
        params["count"] = rng.choice([0, 1, 2])
    elif method == "terminal.resize":
        params["cols"] = rng.choice([20, 80, 200])
    elif method == "image.attach":
        params["path"] = rng.choice(PATHS)
    elif method == "input.detect_drop":
        params["text"] = rng.choice(PATHS)
    elif method == "complete.path":
        params["word"] = rng.choice(PATHS)
        if rng.random() < 0.5:
            params["cwd"] = rng.choice(PATHS)
    elif method in ("clarify.respond", "approval.respond"):
        params["request_id"], params["answer"], params["choice"] = _text(rng), _text(rng), "deny"
    if params and rng.random() < 0.15:
        params[rng.choice([*params, "limit", "cwd"])] = rng.choice(ODD)
    return params


def test_racing_requests_on_live_sessions_crash_nothing(spawn: Any, home: Path) -> None:
    tui: TuiProcess = spawn()
    tui.wait_event("", "gateway.ready", timeout=20)
    rng = random.Random(SEED)
    sessions = [tui.create() for _ in range(6)]
    for sid in sessions[:5]:  # stored, so a close can be undone by a resume; the sixth is not
        tui.turn(sid, "warm up")
    weights = list(ON_A_SESSION.values())
    names = list(ON_A_SESSION)
    sent: dict[int, str] = {}
    for index in range(REQUESTS):
        method = rng.choice(ANYWHERE) if rng.random() < 0.08 else rng.choices(names, weights)[0]
        request_id = tui.start(method, _params(rng, method, sessions))
        sent[request_id] = method
        if index % BATCH == BATCH - 1:
            tui.call("gateway.ping", timeout=60)  # paces the batches; the requests still overlap
    missing = [i for i in sent if i not in tui.col.responses]
    if missing:
        try:
            tui.col.wait(lambda: all(i in tui.col.responses for i in sent), 60)
        except AssertionError:
            unanswered = sorted({sent[i] for i in sent if i not in tui.col.responses})
            raise AssertionError(
                f"seed {SEED}: unanswered {unanswered}; stderr: {tui.stderr_text()[-2000:]}"
            ) from None
    internal = [
        (sent[i], tui.col.responses[i]["error"].get("message"))
        for i in sent
        if tui.col.responses[i].get("error", {}).get("code") == -32603
    ]
    assert internal == [], f"seed {SEED}: internal errors {internal[:5]}"
    answers = [f.get("id") for f in map(_frame, tui.raw_lines) if "method" not in f and f.get("id") in sent]
    assert len(answers) == len(set(answers)), f"seed {SEED}: a request answered twice"
    unparsable = [line for line in tui.raw_lines if not _frame(line)]
    assert unparsable == [], f"seed {SEED}: stdout lines that are not frames: {unparsable[:3]!r}"
    assert tui.alive(), f"seed {SEED}"
    fresh = tui.create()
    assert tui.turn(fresh, "after the race", timeout=60)["text"] == "You said: after the race"
    stderr = tui.stderr_text()
    assert "Traceback" not in stderr, f"seed {SEED}: {stderr[-3000:]}"
    assert tui.close() == 0


def _frame(line: bytes) -> dict[str, Any]:
    """The frame a stdout line holds, or {} for a line that is not one."""
    try:
        frame = json.loads(line)
    except ValueError:
        return {}
    return frame if isinstance(frame, dict) else {}
