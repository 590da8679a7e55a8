"""Malformed input never kills the gateway or a session, and never reaches -32603
(docs/reference/tui-gateway.md#malformed-input)."""

from __future__ import annotations

import itertools

from tests.tui.client import TuiProcess

METHODS = [
    "prompt.submit", "prompt.background", "session.steer", "session.create", "session.resume",
    "session.list", "session.active_list", "session.activate", "session.close", "session.interrupt",
    "session.history", "session.compress", "session.branch", "session.title", "session.usage",
    "session.status", "session.events.since", "clarify.respond", "sudo.respond", "secret.respond",
    "approval.respond", "config.set", "config.get", "model.options", "commands.catalog",
    "command.resolve", "command.dispatch", "slash.exec", "cli.exec", "reload.mcp", "process.stop",
    "delegation.status", "subagent.interrupt", "subagent.steer", "spawn_tree.save", "spawn_tree.list",
    "spawn_tree.load", "terminal.resize", "clipboard.paste", "image.attach", "gateway.ping",
]  # fmt: skip

KEYS = [
    "session_id", "text", "cols", "cwd", "title", "model", "messages", "limit", "last_seen", "request_id",
    "answer", "password", "value", "choice", "key", "scope", "name", "arg", "command", "argv", "timeout",
    "count", "up_to_row_id", "focus_topic", "subagent_id", "subagents", "path", "label", "refresh",
    "truncate_before_row_id", "truncate_before_user_ordinal", "confirm_truncate", "omit_messages",
    "include_archived", "all", "display_kind", "rebind_survivor_row_ids", "parent_session_id",
]  # fmt: skip

BAD_VALUES: list[object] = [None, True, 3.5, -1, "", "\u2028", [], [1, "x"], {"a": {}}, "x" * 5000]


def test_wrong_types_never_crash_or_leak_internal_errors(tui: TuiProcess) -> None:
    """Every method with every key set to odd values answers with a result or a non-internal error."""
    keep = tui.create()
    tui.turn(keep, "before the storm")
    values = itertools.cycle(BAD_VALUES)
    pending = []
    for method in METHODS:
        if method == "cli.exec":
            continue  # would run real commands with odd argv; covered by its own test
        for round_ in range(3):
            params = {key: next(values) for key in KEYS}
            if round_ == 2 and method != "session.close":
                params["session_id"] = keep
                params.pop("confirm_truncate", None)
            pending.append((method, tui.start(method, params)))
    internal = []
    for method, request_id in pending:
        frame = tui.response(request_id, timeout=30)
        if "error" in frame and frame["error"]["code"] == -32603:
            internal.append(method)
    assert internal == []
    assert tui.alive()
    tui.call("session.interrupt", session_id=keep)
    tui.wait_idle(keep)
    done = tui.turn(keep, "after the storm")
    assert done["text"] == "You said: after the storm"


def test_garbage_lines_and_envelopes(tui: TuiProcess) -> None:
    """Odd envelopes: bad ids, non-string methods, nested junk, blank lines, NUL bytes."""
    for raw in [
        b"",
        b"   ",
        b"null",
        b"42",
        b'"str"',
        b'{"id":true,"method":"gateway.ping"}',
        b'{"id":{"a":1},"method":"gateway.ping"}',
        b'{"id":7,"method":7}',
        b'{"id":8,"method":""}',
        b'{"id":9,"method":"gateway.ping","params":"x"}',
        b'{"id":10,"method":"gateway.ping","params":null}',
        b"\x00\x00\x00",
        b"[" * 10000,
        b'{"id":11,"method":"session.create","params":{"cols":1e309}}',
    ]:
        tui.send_raw(raw + b"\n")
    assert tui.response(7)["error"]["code"] == -32600
    assert tui.response(8)["error"]["code"] == -32600
    assert tui.response(9)["error"]["code"] == -32602
    assert tui.response(10)["result"]["ok"] is True
    assert tui.response(11)["error"]["code"] in (-32602, -32700)
    assert tui.call("gateway.ping")["ok"] is True


def test_non_finite_ids_are_refused_and_run_nothing(tui: TuiProcess) -> None:
    """An id like ``1e400`` (parsed as infinity) is answered -32600 with id null; nothing runs."""
    sid = tui.create()
    tui.turn(sid, "first")
    prompt = b'"method":"prompt.submit","params":{"session_id":"%s","text":"must not run"}}' % sid.encode()
    for raw_id in (b"1e400", b"-1e400", b"NaN", b"Infinity"):
        before = len(tui.col.null_errors)
        tui.send_raw(b'{"jsonrpc":"2.0","id":' + raw_id + b"," + prompt + b"\n")
        error = tui.col.wait(lambda start=before: tui.col.null_errors[start:], timeout=10)[0]
        assert error["id"] is None
        # 1e400 is valid JSON with a non-finite value; NaN/Infinity are not JSON at all.
        assert error["error"]["code"] == (-32600 if raw_id.endswith(b"400") else -32700)
    # A prompt that had been accepted would run before this one (the session queue is FIFO).
    tui.turn(sid, "second")
    history = tui.call("session.history", session_id=sid)
    texts = [m.get("text") for m in history["messages"]]
    assert texts == ["first", "You said: first", "second", "You said: second"]
