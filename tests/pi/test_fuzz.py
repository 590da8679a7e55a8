"""10,000 lines of garbage, mistyped commands and real ones on ``hermes pi``'s stdin crash nothing.

Every line that is not a JSON object gets pi's ``parse`` failure, every command with an ``id``
gets exactly one response, stdout holds nothing but records, and the process still answers at
the end. The lines come from a seeded generator (the seed is in the failure message); commands
that would act on the machine (``bash``, ``export_html``) only ever get fields of the wrong type.
"""

from __future__ import annotations

import json
import os
import random
import string
from collections.abc import Callable
from typing import Any

from tests.pi.client import PiProcess

LINES = 10_000
# Another seed explores other interleavings: HERMES_PI_FUZZ_SEED=N pytest tests/pi/test_fuzz.py
SEED = int(os.environ.get("HERMES_PI_FUZZ_SEED", "20260101"))
COMMANDS = (
    "prompt steer follow_up abort clear_queue new_session get_state get_messages set_model cycle_model "
    "get_available_models set_thinking_level cycle_thinking_level get_available_thinking_levels "
    "set_steering_mode set_follow_up_mode compact set_auto_compaction set_auto_retry abort_retry bash "
    "abort_bash get_session_stats export_html switch_session fork clone get_fork_messages get_entries "
    "get_tree get_last_assistant_text set_session_name get_commands"
).split()
HARMLESS = (
    "get_state get_messages get_entries get_tree get_commands get_available_models get_fork_messages "
    "get_session_stats get_last_assistant_text clear_queue get_available_thinking_levels abort abort_retry"
).split()
NEVER_A_STRING = {"bash": "command", "export_html": "outputPath"}


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return rng.randint(-(2**40), 2**40)
    if kind == 1:
        return rng.random() * 1e6
    if kind == 2:
        return "".join(
            rng.choice(string.printable + "\u2028\u00e9\U0001f600") for _ in range(rng.randrange(12))
        )
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return ""
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {_word(rng): _value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters) for _ in range(rng.randrange(1, 9)))


def _line(rng: random.Random, index: int) -> tuple[bytes, str | None, bool]:
    """Return a line, the id a response must carry (or None), and whether it is a parse error."""
    kind = rng.randrange(10)
    if kind == 0:  # bytes that are not JSON (no newline inside)
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))).replace(b"\n", b"x")
        if not raw.strip():
            raw = b"?"
        try:
            value = json.loads(raw)
        except ValueError:
            return raw, None, True
        return raw, None, not isinstance(value, dict)
    if kind == 1:  # JSON that is not an object
        value = rng.choice([[1, 2], "text", 7, None, True, [{"type": "get_state"}]])
        return json.dumps(value).encode(), None, True
    if kind == 2:  # a dialog answer nobody asked for
        record = {"type": "extension_ui_response", "id": _value(rng), "value": _value(rng)}
        return json.dumps(record).encode(), None, False
    command_id = f"f{index}"
    if kind in (3, 4, 5):  # a command with random fields
        name = rng.choice(COMMANDS)
        record = {
            "id": command_id,
            "type": name,
            # A random key is never "id" or "type": the line would then not be the command it claims.
            **{w: _value(rng) for _ in range(rng.randrange(3)) if (w := _word(rng)) not in ("id", "type")},
        }
        for field in (
            "message",
            "provider",
            "modelId",
            "level",
            "mode",
            "entryId",
            "sessionPath",
            "name",
            "since",
        ):
            if rng.random() < 0.3:
                record[field] = _value(rng)
        if name in NEVER_A_STRING:
            record[NEVER_A_STRING[name]] = rng.choice([1, [], {}, True])
        return json.dumps(record).encode(), command_id, False
    if kind == 6:  # an unknown command
        return json.dumps({"id": command_id, "type": _word(rng)}).encode(), command_id, False
    if kind == 7:  # a prompt, a steer or a follow-up with plain words
        name = rng.choice(["prompt", "steer", "follow_up"])
        text = " ".join(_word(rng) for _ in range(rng.randrange(1, 5)))
        return json.dumps({"id": command_id, "type": name, "message": text}).encode(), command_id, False
    name = rng.choice(HARMLESS)
    return json.dumps({"id": command_id, "type": name}).encode(), command_id, False


def test_ten_thousand_lines_crash_nothing(spawn: Callable[..., PiProcess]) -> None:
    pi = spawn()
    rng = random.Random(SEED)
    expected: dict[str, bytes] = {}
    parse_errors = 0
    batch: list[bytes] = []
    for index in range(LINES):
        line, command_id, bad = _line(rng, index)
        batch.append(line + b"\n")
        if command_id is not None:
            expected[command_id] = line
        parse_errors += bad
        if len(batch) == 200:
            pi.send_raw(b"".join(batch))
            batch = []
    pi.send_raw(b"".join(batch))
    # The waits stay inside the test's own timeout, so a failure says what went unanswered.
    state = pi.call("get_state", timeout=40)
    assert isinstance(state["sessionId"], str), f"seed {SEED}"
    missing = [i for i in expected if i not in pi.responses]
    if missing:  # a few handlers may still be finishing (an abort waits for its run)
        try:
            pi.wait(lambda: all(i in pi.responses for i in expected), 10, "every response")
        except AssertionError:
            unanswered = [expected[i][:200] for i in expected if i not in pi.responses]
            raise AssertionError(
                f"seed {SEED}: {len(unanswered)} commands unanswered, first {unanswered[:5]!r}; "
                f"stderr: {pi.stderr()[-2000:]}"
            ) from None
    responses = [r for r in pi.records if r.get("type") == "response"]
    with_ids = [r["id"] for r in responses if "id" in r]
    assert sorted(with_ids) == sorted([*expected, *[r for r in with_ids if not str(r).startswith("f")]])
    assert len(with_ids) == len(set(with_ids)), f"a command answered twice (seed {SEED})"
    parse = [r for r in responses if "id" not in r]
    assert len(parse) == parse_errors and all(r["command"] == "parse" for r in parse), f"seed {SEED}"
    assert all(isinstance(r["success"], bool) for r in responses)
    assert pi.proc.poll() is None
    pi.close_stdin()
    assert pi.wait_exit(60) == 0
    assert "Traceback" not in pi.stderr(), pi.stderr()[-3000:]
