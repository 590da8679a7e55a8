"""Framing, envelope and robustness over real stdio (docs/reference/tui-gateway.md#transport, checks 1-5,
10)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.cli.cli_helpers import write_distribution
from tests.tui.client import TuiProcess


def test_first_frame_is_gateway_ready(tui: TuiProcess) -> None:
    """Check 1: gateway.ready is the first frame, global, with skin, epoch and protocol version."""
    first = tui.col.frames[0]
    assert first["method"] == "event"
    params = first["params"]
    assert params["type"] == "gateway.ready"
    assert params["session_id"] == ""
    assert "seq" not in params
    payload = params["payload"]
    assert payload["skin"]["name"] == "default"
    assert len(payload["replay_epoch"]) == 32
    assert payload["protocol"]["version"] == 1


def test_parse_error_then_normal_service(tui: TuiProcess) -> None:
    """Check 2: `{not json` gets -32700 with id null; the next request is answered."""
    seen = len(tui.col.null_errors)
    tui.send_raw(b"{not json\n")
    tui.send_raw(b"\xff\xfe not utf8\n")
    assert tui.call("gateway.ping")["ok"] is True
    errors = tui.col.null_errors[seen:]
    assert [e["error"]["code"] for e in errors[:2]] == [-32700, -32700]
    assert all(e["id"] is None for e in errors)


def test_invalid_requests_keep_the_process_serving(tui: TuiProcess) -> None:
    """Check 3: batch, no method, unknown method, params not an object."""
    seen = len(tui.col.null_errors)
    tui.send_raw(b"[1,2]\n")
    tui.send_raw(b'{"id":1}\n')
    tui.send_raw(b'{"id":2,"method":"nope"}\n')
    tui.send_raw(b'{"id":3,"method":"session.create","params":[1]}\n')
    tui.send_raw(b'{"id":4,"jsonrpc":"1.0","method":"gateway.ping"}\n')
    assert tui.response(1)["error"]["code"] == -32600
    nope = tui.response(2)["error"]
    assert nope["code"] == -32601 and nope["message"] == "unknown method: nope"
    bad = tui.response(3)["error"]
    assert bad["code"] == -32602 and bad["data"]["param"] == "params"
    assert tui.response(4)["error"]["code"] == -32600
    tui.col.wait(lambda: tui.col.null_errors[seen:], 5)
    assert tui.col.null_errors[seen]["error"]["code"] == -32600
    assert tui.call("gateway.ping")["ok"] is True
    assert tui.alive()


def test_wrong_param_types_and_string_ids(tui: TuiProcess) -> None:
    """Known params of the wrong type get -32602 with {param, expected}; string ids echo as strings."""
    err = tui.error("session.create", cols="wide")
    assert err.code == -32602 and err.data == {"param": "cols", "expected": "integer"}
    tui.send({"id": "abc", "method": "gateway.ping"})
    assert tui.response("abc")["result"]["ok"] is True
    tui.send({"method": "gateway.ping"})  # a notification gets no response
    assert tui.call("gateway.ping")["ok"] is True


def test_huge_line_is_refused_and_the_session_survives(tui: TuiProcess) -> None:
    """A line over 8 MiB gets -32600 "request too large"; the session still works."""
    sid = tui.create()
    tui.send_raw(
        b'{"id":99,"method":"prompt.submit","params":{"text":"' + b"x" * (9 * 1024 * 1024) + b'"}}\n'
    )
    tui.col.wait(lambda: [e for e in tui.col.null_errors if e["error"]["message"] == "request too large"], 20)
    assert tui.turn(sid, "still here")["text"] == "You said: still here"


def test_line_separators_round_trip_and_crlf(tui: TuiProcess) -> None:
    """Check 4: raw U+2028/U+2029 survive; a line ending in \\r\\n is accepted."""
    sid = tui.create()
    text = "a\u2028b\u2029c"
    frame = {"id": 50, "method": "prompt.submit", "params": {"session_id": sid, "text": text}}
    tui.send_raw(json.dumps(frame, ensure_ascii=False).encode("utf-8") + b"\r\n")
    assert tui.response(50)["result"]["status"] == "streaming"
    done = tui.wait_complete(sid)
    assert done["text"] == f"You said: {text}"


def test_seq_is_the_log_number_and_global_events_have_none(tui: TuiProcess) -> None:
    """Check 10: a session's events carry increasing seq, the numbers of its event log (a frame
    of merged deltas carries its newest delta's); the gateway's own notices (``session.info``
    after create) and global events carry none."""
    sid = tui.create()
    tui.turn(sid, "one")
    tui.turn(sid, "two [[tokens 50]]")
    numbered = [e for e in tui.events(sid) if "seq" in e]
    seqs = [e["seq"] for e in numbered]
    assert seqs == sorted(set(seqs)) and seqs[0] >= 1
    assert [e["type"] for e in tui.events(sid) if "seq" not in e] == ["session.info"]
    assert all("seq" not in e for e in tui.events(""))
    # A replay from 0 projects the log again: every frame but the deltas (which may merge
    # differently) comes back with its number, the deltas join to the same text.
    replay = tui.call("session.events.since", session_id=sid, last_seen=0)
    again = [e["seq"] for e in replay["events"]]
    assert again == sorted(set(again)) and replay["latest_seq"] == seqs[-1] == again[-1]
    assert replay["truncated"] is False
    kept = {(e["seq"], e["type"]) for e in replay["events"]}
    assert all((e["seq"], e["type"]) in kept for e in numbered if not e["type"].endswith(".delta"))

    def text(frames: list[dict[str, Any]]) -> str:
        return "".join(e["payload"]["text"] for e in frames if e["type"] == "message.delta")

    assert text(replay["events"]) == text(numbered)


def test_stdout_hygiene_with_a_printing_tool(
    tmp_path: Path, spawn: Callable[..., TuiProcess], home: Path
) -> None:
    """Check 5: a tool that print()s mid-turn never corrupts the frame stream."""
    module = """
from hermes_core import ToolSpec, ToolResult, hookimpl
import os, subprocess

def _noisy(args, ctx):
    print("stray print from a tool")
    os.write(1, b"raw fd 1 write\\n")
    subprocess.run(["echo", "child process output"], check=False)
    return ToolResult("noisy done")

@hookimpl
def hermes_tools():
    return ToolSpec(
        name="noisy", description="prints", schema={"type": "object"}, handler=_noisy, kind="read"
    )
"""
    dist = tmp_path / "dist"
    write_distribution(dist, "noisytool", {"noisytool": module}, {"noisy": "noisytool"})
    proc = spawn(env={"PYTHONPATH": str(dist)})
    proc.wait_event("", "gateway.ready", timeout=20)
    sid = proc.create()
    done = proc.turn(sid, "[[tool noisy {}]]")
    assert done["status"] == "complete"
    tool = proc.wait_event(sid, "tool.complete")
    assert tool["payload"]["result"] == "noisy done"
    for line in proc.raw_lines:
        json.loads(line)
    assert "stray print from a tool" in proc.stderr_text()


def test_eof_stops_gracefully_with_exit_zero(spawn: Callable[..., TuiProcess]) -> None:
    """EOF on stdin interrupts the running turn (message.complete interrupted) and exits 0."""
    proc = spawn()
    proc.wait_event("", "gateway.ready", timeout=20)
    sid = proc.create()
    proc.call("prompt.submit", session_id=sid, text="[[tokens 100000]] [[delay 5]]")
    proc.wait_event(sid, "message.delta")
    assert proc.close() == 0
    assert proc.events(sid, "message.complete")[-1]["payload"]["status"] == "interrupted"


def test_sigterm_stops_gracefully_and_sigint_is_ignored(spawn: Callable[..., TuiProcess]) -> None:
    """docs/reference/tui-gateway.md#stdio: SIGINT is ignored; SIGTERM interrupts the running turn and exits
    0."""
    import signal

    proc = spawn()
    proc.wait_event("", "gateway.ready", timeout=20)
    sid = proc.create()
    proc.proc.send_signal(signal.SIGINT)
    assert proc.call("gateway.ping")["ok"] is True
    proc.call("prompt.submit", session_id=sid, text="[[tokens 100000]] [[delay 5]]")
    proc.wait_event(sid, "message.delta")
    proc.proc.send_signal(signal.SIGTERM)
    assert proc.proc.wait(10) == 0
    assert proc.wait_complete(sid)["status"] == "interrupted"


def test_lost_stdout_means_the_host_is_gone(spawn: Callable[..., TuiProcess]) -> None:
    """docs/reference/tui-gateway.md#stdio: a broken stdout pipe stops the gateway quietly with exit code
    0."""
    proc = spawn()
    proc.wait_event("", "gateway.ready", timeout=20)
    sid = proc.create()
    proc.call("prompt.submit", session_id=sid, text="[[tokens 100000]] [[delay 1]]")
    proc.wait_event(sid, "message.delta")
    assert proc.proc.stdout is not None
    proc.proc.stdout.close()
    assert proc.proc.wait(15) == 0
