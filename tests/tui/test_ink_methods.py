"""The methods the Ink TUI calls beyond the core protocol, over real stdio
(docs/reference/tui-gateway.md#composer-helpers, #methods-answered-as-off, #session-lifecycle)."""

from __future__ import annotations

import json
import struct
import time
import zlib
from pathlib import Path

from tests.tui.client import TuiProcess, write_config

GUARD = 'run [[tool terminal {"command": "echo hermes-guard-test"}]]'


def _png(path: Path, width: int = 3, height: int = 2) -> Path:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\x00\x00\x00" * width for _ in range(height))
    body = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return path


def test_session_info_has_what_the_ink_tui_reads(tui: TuiProcess) -> None:
    """``tools`` is a toolset map, ``skills`` an (empty) map, ``model`` a string, MCP servers listed."""
    info = tui.call("session.create")["info"]
    assert isinstance(info["tools"], dict) and info["tools"]
    assert all(isinstance(v, list) and all(isinstance(n, str) for n in v) for v in info["tools"].values())
    assert "terminal" in info["tools"]["tools"]
    assert info["skills"] == {} and info["mcp_servers"] == []
    assert info["model"] == "mock:echo" and info["version"]
    assert info["yolo"] is False and info["fast"] is False and info["update_behind"] is None


def test_setup_status(tui: TuiProcess, spawn, tmp_path: Path) -> None:
    """A configured model counts; the offline fallback alone does not."""
    assert tui.call("setup.status") == {"provider_configured": True}
    bare = tmp_path / "bare"
    write_config(bare, "")
    assert spawn(home=bare).call("setup.status", timeout=30) == {"provider_configured": False}


def test_complete_slash(tui: TuiProcess) -> None:
    """Command names from ``/``; the TUI's own commands too; nothing for plain text."""
    found = tui.call("complete.slash", text="/mo")
    texts = [i["text"] for i in found["items"]]
    assert "/model" in texts and "/mouse" in texts and found["replace_from"] == 1
    assert all(set(i) == {"text", "display", "meta"} for i in found["items"])
    every = tui.call("complete.slash", text="/")["items"]
    assert {"/help", "/compress", "/details"} <= {i["text"] for i in every}
    assert tui.call("complete.slash", text="hello") == {"items": []}
    assert tui.error("complete.slash", text=5).code == -32602


def test_complete_path(tui: TuiProcess, tmp_path: Path) -> None:
    """Entries completing a word, written back the way it was typed, in the session's folder."""
    work = tmp_path / "cwork"
    (work / "src").mkdir(parents=True)
    (work / "src" / "main.py").write_text("x", encoding="utf-8")
    (work / "setup.cfg").write_text("x", encoding="utf-8")
    (work / ".hidden").write_text("x", encoding="utf-8")
    sid = tui.call("session.create", cwd=str(work))["session_id"]
    items = tui.call("complete.path", word="./s", session_id=sid)["items"]
    assert [(i["text"], i["meta"]) for i in items] == [("./setup.cfg", ""), ("./src/", "dir")]
    nested = tui.call("complete.path", word="src/m", session_id=sid)["items"]
    assert [i["text"] for i in nested] == ["src/main.py"]
    assert (
        tui.call("complete.path", word=f"{work}/.h", session_id=sid)["items"][0]["text"] == f"{work}/.hidden"
    )
    assert tui.call("complete.path", word="@fi", session_id=sid) == {"items": []}
    assert tui.call("complete.path", word="nope/x", session_id=sid) == {"items": []}
    assert tui.call("complete.path", word="a\x00b") == {"items": []}


def test_detect_drop(tui: TuiProcess, tmp_path: Path) -> None:
    """A line that is a file path: images are attached, other files become a note; text is not."""
    work = tmp_path / "drop"
    work.mkdir()
    image = _png(work / "shot one.png")
    notes = work / "notes.txt"
    notes.write_text("n", encoding="utf-8")
    sid = tui.call("session.create", cwd=str(work))["session_id"]
    assert tui.call("input.detect_drop", session_id=sid, text="hello there") == {"matched": False}
    assert tui.call("input.detect_drop", session_id=sid, text="/no/such/file.png") == {"matched": False}
    got = tui.call("input.detect_drop", session_id=sid, text=f"'{image}' what is this")
    assert got["matched"] and got["is_image"] and got["count"] == 1 and got["text"] == "what is this"
    assert (got["width"], got["height"]) == (3, 2)
    escaped = tui.call("input.detect_drop", session_id=sid, text=str(image).replace(" ", "\\ "))
    assert (
        escaped["is_image"]
        and escaped["count"] == 2
        and escaped["text"] == "[User attached image: shot one.png]"
    )
    other = tui.call("input.detect_drop", session_id=sid, text="./notes.txt summarise")
    assert other == {
        "matched": True,
        "is_image": False,
        "path": str(notes),
        "name": "notes.txt",
        "text": f"[User attached file: {notes}]\nsummarise",
    }
    assert tui.error("input.detect_drop", session_id="nope", text="x").code == 4001
    assert tui.error("input.detect_drop", session_id=sid, text=1).code == -32602


def test_shell_exec(tui: TuiProcess, tmp_path: Path) -> None:
    """Runs in the session folder; guarded commands and empty ones are refused."""
    work = tmp_path / "sh"
    work.mkdir()
    tui.call("session.create", cwd=str(work))
    done = tui.call("shell.exec", command="pwd; echo oops >&2; exit 3")
    assert done == {"stdout": f"{work}\n", "stderr": "oops\n", "code": 3}
    refused = tui.error("shell.exec", command="echo hermes-guard-test")
    assert refused.code == 4005 and refused.data == {"patterns": ["hermes-guard-test"]}
    assert tui.error("shell.exec", command="  ").code == 4004
    assert tui.error("shell.exec", command=["ls"]).code == -32602


def test_paste_collapse(tui: TuiProcess, shared_home: Path) -> None:
    text = "line\n" * 9 + "end"
    got = tui.call("paste.collapse", text=text)
    assert got["lines"] == 10 and Path(got["path"]).read_text(encoding="utf-8") == text
    assert Path(got["path"]).parent == shared_home / "pastes" and got["path"] in got["placeholder"]
    assert tui.error("paste.collapse", text="").code == 4004


def test_undo_save_most_recent_and_delete(tui: TuiProcess, shared_home: Path) -> None:
    sid = tui.create()
    tui.turn(sid, "first")
    tui.turn(sid, "second")
    assert tui.call("session.most_recent")["session_id"] == sid
    assert tui.call("session.undo", session_id=sid) == {"removed": 2}
    texts = [m["text"] for m in tui.call("session.history", session_id=sid)["messages"]]
    assert texts == ["first", "You said: first"]
    saved = Path(tui.call("session.save", session_id=sid)["file"])
    assert saved.parent == shared_home / "sessions" / "saved"
    document = json.loads(saved.read_text(encoding="utf-8"))
    assert document["session_id"] == sid and [m["text"] for m in document["messages"]] == texts
    assert tui.call("session.undo", session_id=sid) == {"removed": 2}
    assert tui.call("session.undo", session_id=sid) == {"removed": 0}
    assert tui.error("session.delete", session_id=sid).code == 4023
    tui.call("session.close", session_id=sid)
    assert tui.error("session.delete", session_id=sid).code == 5036
    assert tui.error("session.delete", session_id="20200101_000000_abcdef").code == 4007
    assert tui.error("session.delete").code == 4006


def test_undo_while_busy_is_4009(tui: TuiProcess) -> None:
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text="[[tokens 5]] [[delay 400]]")
    assert tui.error("session.undo", session_id=sid).code == 4009
    tui.wait_complete(sid)


def test_features_off_answer_like_upstream(tui: TuiProcess) -> None:
    """Upstream-only features answer "off"; anything else unknown is still -32601."""
    assert tui.call("pet.cells", state="idle", graphics=False) == {"enabled": False}
    assert tui.call("pet.gallery") == {"enabled": False, "active": "", "pets": []}
    assert tui.call("billing.state")["logged_in"] is False
    assert tui.call("subscription.state")["ok"] is True
    charge = tui.call("billing.charge", amount_usd="5", idempotency_key="k1")
    assert charge["ok"] is False and charge["error"] == "invalid_token" and charge["idempotency_key"] == "k1"
    assert tui.call("rollback.list", session_id="x") == {"enabled": False, "checkpoints": []}
    assert tui.call("rollback.restore", hash="abc")["success"] is False
    assert tui.error("rollback.diff").code == 4014
    assert tui.call("voice.toggle", action="status")["enabled"] is False
    assert tui.error("voice.record", action="start").code == 4015
    assert tui.call("skills.manage", action="list") == {"skills": {}}
    assert tui.error("learning.frames", cols=80).code == 5000
    assert tui.error("model.save_key", slug="openai", api_key="sk-x").code == 4003
    unknown = tui.error("pets.feed")
    assert unknown.code == -32601 and unknown.message == "unknown method: pets.feed"


#: every "off" method with each action it answers (a result) and the code of the ones it refuses
OFF_CALLS: list[tuple[str, dict[str, object], int | None]] = [
    ("pet.info", {}, None),
    ("pet.info.meta", {}, None),
    ("pet.cells", {"state": "idle", "cols": 20, "graphics": True}, None),
    ("pet.gallery", {"localOnly": True}, None),
    ("pet.select", {"slug": "cat"}, 5031),
    ("pet.select", {}, 4004),
    ("billing.state", {}, None),
    ("usage.bars", {}, None),
    ("subscription.state", {}, None),
    ("subscription.preview", {"subscription_type_id": "pro"}, None),
    ("subscription.change", {"subscription_type_id": "pro", "cancel": False}, None),
    ("subscription.resume", {}, None),
    ("subscription.upgrade", {"subscription_type_id": "pro", "idempotency_key": "k"}, None),
    ("billing.charge", {"amount_usd": 5}, None),
    ("billing.charge_status", {"charge_id": "c1"}, None),
    ("billing.auto_reload", {"enabled": True, "threshold": 5, "top_up_amount": 10.5}, None),
    ("billing.step_up", {"session_id": "s"}, None),
    ("learning.frames", {"cols": 80, "rows": 24, "frames": 48}, 5000),
    ("learning.detail", {"id": "x"}, 5000),
    ("learning.delete", {"id": "x"}, 5000),
    ("learning.edit", {"id": "x", "content": "y"}, 5000),
    ("voice.toggle", {}, None),
    ("voice.toggle", {"action": "on"}, None),
    ("voice.toggle", {"action": "off"}, None),
    ("voice.toggle", {"action": "tts"}, 4014),
    ("voice.toggle", {"action": "sing"}, 4013),
    ("voice.record", {"action": "stop"}, None),
    ("voice.record", {}, 4015),
    ("voice.record", {"action": "sing"}, 4019),
    ("browser.manage", {}, None),
    ("browser.manage", {"action": "disconnect"}, None),
    ("browser.manage", {"action": "connect", "url": "http://localhost:9222"}, 5029),
    ("browser.manage", {"action": "sing"}, 4015),
    ("skills.manage", {}, None),
    ("skills.manage", {"action": "search", "query": "x"}, None),
    ("skills.manage", {"action": "browse", "page": 2, "page_size": 10}, None),
    ("skills.manage", {"action": "inspect", "query": "x"}, None),
    ("skills.manage", {"action": "install", "query": "x"}, 5024),
    ("skills.manage", {"action": "sing"}, 4017),
    ("skills.reload", {}, None),
    ("rollback.list", {"session_id": "s"}, None),
    ("rollback.diff", {"hash": "abc"}, None),
    ("rollback.diff", {}, 4014),
    ("rollback.restore", {"hash": "abc", "file_path": "a.py"}, None),
    ("model.save_key", {"slug": "openai", "api_key": "sk-x"}, 4003),
    ("model.save_key", {}, 4001),
    ("model.disconnect", {"slug": "openai"}, 4003),
]


def test_every_off_answer_follows_its_exported_result(tui: TuiProcess) -> None:
    """Each "off" method is typed in the export, and every answer it gives (each action) validates
    against its exported result schema; the refusals keep upstream's codes."""
    from hermes_tui_gateway.feature_off import ANSWERS
    from tests import wire_check

    methods = {m["name"]: m for m in wire_check.document("tui")["methods"]}
    assert {name for name, _p, _c in OFF_CALLS} == set(ANSWERS)
    for name, params, code in OFF_CALLS:
        schema = methods[name]["result"]["schema"]
        assert "$ref" in schema and methods[name].get("x-typed") is not False, name
        if code is not None:
            assert tui.error(name, params).code == code, (name, params)
            continue
        result = tui.call(name, params)
        found = wire_check.problems("tui", schema["$ref"].rsplit("/", 1)[1], result)
        assert not found, (name, params, found)
        sent = {p["name"] for p in methods[name]["params"]}
        assert set(params) <= sent, (name, sorted(set(params) - sent))
    assert tui.call("voice.toggle", action="status")["details"]
    assert tui.call("browser.manage") == {"connected": False, "url": ""}
    assert tui.call("billing.charge", idempotency_key="k1")["idempotency_key"] == "k1"
    # A param of the wrong type is the usual -32602, naming it.
    bad = tui.error("voice.toggle", action=5)
    assert bad.code == -32602 and bad.data == {"param": "action", "expected": "string"}


def test_config_keys_the_ink_tui_sets(tui: TuiProcess) -> None:
    """``MODEL --provider P --session`` from the model picker, yolo without a value, fast, display keys."""
    sid = tui.create()
    switched = tui.call("config.set", key="model", session_id=sid, value="alt --provider mock --session")
    assert switched["value"] == "mock:alt"
    assert tui.call("config.set", key="yolo", session_id=sid)["value"] == "1"
    assert tui.call("config.get", key="yolo", session_id=sid) == {"value": "1"}
    assert tui.call("config.set", key="yolo", session_id=sid)["value"] == "0"
    assert tui.call("config.get", key="fast", session_id=sid) == {"key": "fast", "value": "normal"}
    assert tui.error("config.set", key="fast", session_id=sid, value="fast").code == 4002
    assert tui.call("config.set", key="compact", session_id=sid, value="on")["value"] == "on"
    assert (
        tui.call("config.set", key="details_mode.tools", session_id=sid, value="expanded")["value"]
        == "expanded"
    )
    assert tui.call("config.get", key="details_mode.tools", session_id=sid) == {"value": "expanded"}
    assert tui.error("config.set", key="details_mode.nope", value="x").code == 4002


def test_subagent_events_carry_the_names_the_tui_reads(tui: TuiProcess) -> None:
    """The subagent fields the TUI's panel reads ride along with ours."""
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text='[[tool delegate_task {"goal": "sum up [[tokens 3]]"}]]')
    done = tui.wait_event(sid, "subagent.complete", timeout=30)["payload"]
    assert done["duration_seconds"] == done["duration_s"] and done["tool_count"] == done["tool_calls"]
    assert done["output_tokens"] == done["usage"]["output"]
    tui.wait_complete(sid, timeout=30)


def test_events_after_an_answer_wait_behind_its_response(spawn, tmp_path: Path) -> None:
    """``tui.answer_settle_s``: what the answer causes is written that long after the response,
    so a host reading frames in batches sees the response on its own."""
    home = tmp_path / "settle"
    write_config(home, 'model = "mock:echo"\n[tui]\nanswer_settle_s = 0.6\n')
    tui = spawn(home=home)
    sid = tui.create()
    tui.call("prompt.submit", session_id=sid, text=GUARD)
    request = tui.wait_event(sid, "approval.request")["payload"]
    before = len(tui.col.frames)
    answered_at = time.monotonic()
    tui.call("approval.respond", session_id=sid, choice="once", request_id=request["request_id"])
    tui.wait_event(sid, "tool.complete")
    assert time.monotonic() - answered_at >= 0.6
    later = tui.col.frames[before:]
    response_at = next(i for i, f in enumerate(later) if f.get("result") == {"resolved": 1})
    first_event = next(i for i, f in enumerate(later) if f.get("method") == "event")
    assert response_at < first_event
    tui.wait_complete(sid)


NEW_METHODS = (
    "setup.status",
    "complete.slash",
    "complete.path",
    "input.detect_drop",
    "shell.exec",
    "paste.collapse",
    "session.most_recent",
    "session.undo",
    "session.save",
    "session.delete",
    "plugins.manage",
    "tools.configure",
)
JUNK: tuple[dict[str, object], ...] = (
    {"session_id": 7, "text": ["x"], "word": {"a": 1}, "command": 3.5, "cwd": False},
    {"session_id": None, "text": None, "word": None, "command": None},
    {"session_id": "", "text": "\x00", "word": "\x00/\x00", "cwd": "/\x00", "command": "\x00"},
    {"session_id": "x" * 5000, "text": "y" * 100_000, "word": "~" + "/a" * 3000, "slug": [], "action": {}},
    {"hash": {"a": 1}, "state": [], "graphics": "yes", "id": None, "amount_usd": [], "value": {}},
)


def test_bad_params_never_get_an_internal_error(tui: TuiProcess) -> None:
    """Every new method and every "off" answer, fed junk params: an answer or a 4xxx/-32602 error,
    never -32603, and the gateway keeps going."""
    from hermes_tui_gateway.feature_off import ANSWERS

    for method in (*NEW_METHODS, *ANSWERS):
        for params in JUNK:
            frame = tui.response(tui.start(method, params), timeout=30)
            if "error" in frame:
                code = frame["error"]["code"]
                assert code == -32602 or 4000 <= code < 6000, (method, params, frame["error"])
    assert tui.call("gateway.ping")["ok"] is True


def test_plugins_manage_lists_the_loaded_plugins(tui: TuiProcess) -> None:
    listed = tui.call("plugins.manage", action="list")
    names = {row["name"]: row for row in listed["plugins"]}
    assert names["tui"]["status"] == "enabled" and names["tui"]["source"] == "bundled"
    assert listed["bundled_count"] == len(listed["plugins"]) and listed["user_count"] == 0
    assert tui.error("plugins.manage", action="toggle", name="mcp").code == 5026
    assert tui.error("plugins.manage", action="toggle").code == 4019
    assert tui.error("plugins.manage", action="nope").code == 4017


def test_tools_configure_hides_tools_from_the_session(tui: TuiProcess) -> None:
    sid = tui.create()
    got = tui.call(
        "tools.configure", action="disable", names=["delegation", "terminal", "nope"], session_id=sid
    )
    assert got == {
        "changed": ["delegation", "terminal"],
        "unknown": ["nope"],
        "missing_servers": [],
        "reset": False,
    }
    again = tui.call("tools.configure", action="disable", names=["terminal"], session_id=sid)
    assert again["changed"] == []
    done = tui.turn(sid, '[[tool terminal {"command": "echo hidden"}]]')
    assert "hidden" not in done["text"]  # the model was not offered the tool, so it did not run
    back = tui.call("tools.configure", action="enable", names=["terminal"], session_id=sid)
    assert back["changed"] == ["terminal"]
    assert tui.error("tools.configure", action="zap", names=["x"], session_id=sid).code == 4017
    assert tui.error("tools.configure", action="enable", names=[], session_id=sid).code == 4018


def test_a_quick_background_task_ends_behind_its_response(spawn, tmp_path: Path) -> None:
    home = tmp_path / "bg"
    write_config(home, 'model = "mock:echo"\n[tui]\nanswer_settle_s = 0.5\n')
    tui = spawn(home=home)
    sid = tui.create()
    before = len(tui.col.frames)
    started = time.monotonic()
    task = tui.call("prompt.background", session_id=sid, text="quick [[tokens 2]]")["task_id"]
    done = tui.wait_event(sid, "background.complete")["payload"]
    assert done["task_id"] == task and done["text"] == "t0 t1"
    assert time.monotonic() - started >= 0.5
    later = tui.col.frames[before:]
    response = next(i for i, f in enumerate(later) if f.get("result") == {"task_id": task})
    complete = next(
        i for i, f in enumerate(later) if f.get("params", {}).get("type") == "background.complete"
    )
    assert response < complete


def test_verbose_tool_events_carry_args_and_result_text(tui: TuiProcess) -> None:
    sid = tui.create()
    tui.call("config.set", key="verbose", session_id=sid, value="verbose")
    tui.turn(sid, '[[tool list_dir {"path": "."}]]')
    start = tui.wait_event(sid, "tool.start")["payload"]
    complete = tui.wait_event(sid, "tool.complete")["payload"]
    assert start["args_text"] == "path: ."
    assert complete["result_text"] == complete["result"]
    tui.call("config.set", key="verbose", session_id=sid, value="all")
    tui.turn(sid, '[[tool list_dir {"path": "."}]]')
    assert "args_text" not in tui.wait_event(sid, "tool.start", count=2)["payload"]


def test_branch_with_an_empty_name_is_a_plain_branch(tui: TuiProcess) -> None:
    """The Ink TUI sends ``name: ""`` for ``/branch`` without a name."""
    sid = tui.create()
    tui.turn(sid, "branch me")
    branched = tui.call("session.branch", session_id=sid, name="")
    assert branched["parent"] == sid and branched["session_id"] != sid
    assert tui.error("session.branch", session_id=sid, name="x\x01").code == 4022
