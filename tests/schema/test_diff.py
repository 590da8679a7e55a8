"""``hermes schema diff``: each compatibility rule, by direction (CONTRIBUTING.md, "The schema gate")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.cli_helpers import run_hermes
from tests.schema.conftest import Exported
from tests.schema.diff_helpers import diff, write

SCHEMAS = "components"


def _tui(doc: dict[str, Any], name: str) -> dict[str, Any]:
    schema: dict[str, Any] = doc["components"]["schemas"][name]
    return schema


def _breaking(done: Any, needle: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("BREAKING")]
    assert any(needle in line for line in lines), done.stdout
    assert "breaking change(s)" in done.stderr


def _compatible(done: Any, needle: str) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    assert not [line for line in done.stdout.splitlines() if line.startswith("BREAKING")], done.stdout
    assert any(line.startswith("ok") and needle in line for line in done.stdout.splitlines()), done.stdout


# -- output: what the server sends -----------------------------------------------------------
def test_removing_an_output_field_is_breaking(tmp_path: Path) -> None:
    done = diff(tmp_path, "tui", lambda d: _tui(d, "Done")["properties"].pop("warning"))
    _breaking(done, "tui: event message.complete: field 'warning' removed")


def test_removing_a_nested_output_field_through_a_ref_is_breaking(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        _tui(d, "Usage")["properties"].pop("input")
        _tui(d, "Usage")["required"].remove("input")

    _breaking(
        diff(tmp_path, "tui", edit), "<Usage>: field 'input' removed"
    )  # reported once, where first reached


def test_removing_an_event_is_breaking(tmp_path: Path) -> None:
    _breaking(
        diff(tmp_path, "tui", lambda d: d["x-events"].pop("message.delta")), "event message.delta: removed"
    )


def test_removing_a_method_is_breaking(tmp_path: Path) -> None:
    _breaking(diff(tmp_path, "tui", lambda d: d["methods"].clear()), "method session.create: removed")


def test_removing_an_enum_value_is_breaking(tmp_path: Path) -> None:
    done = diff(tmp_path, "tui", lambda d: _tui(d, "Done")["properties"]["status"]["enum"].remove("error"))
    _breaking(done, "enum value 'error' removed")


def test_adding_an_enum_value_is_compatible(tmp_path: Path) -> None:
    done = diff(tmp_path, "tui", lambda d: _tui(d, "Done")["properties"]["status"]["enum"].append("queued"))
    _compatible(done, "enum value 'queued' added")


def test_removing_a_union_variant_is_breaking(tmp_path: Path) -> None:
    done = diff(tmp_path, "tui", lambda d: _tui(d, "Created")["properties"]["part"]["oneOf"].pop(1))
    _breaking(done, "union variant string removed")


def test_adding_an_optional_output_field_is_compatible(tmp_path: Path) -> None:
    done = diff(tmp_path, "tui", lambda d: _tui(d, "Done")["properties"].update(partial={"type": "boolean"}))
    _compatible(done, "optional field 'partial' added")


def test_an_output_field_that_may_be_absent_is_breaking(tmp_path: Path) -> None:
    done = diff(tmp_path, "tui", lambda d: _tui(d, "Done")["required"].remove("usage"))
    _breaking(done, "field 'usage' is no longer always sent")


def test_changing_an_output_type_is_breaking(tmp_path: Path) -> None:
    done = diff(tmp_path, "tui", lambda d: _tui(d, "Delta")["properties"].update(text={"type": "integer"}))
    _breaking(done, "type 'string' no longer sent")


def test_removing_an_error_code_is_breaking(tmp_path: Path) -> None:
    _breaking(diff(tmp_path, "tui", lambda d: d["x-error-codes"].clear()), "error code 4001: removed")


def test_adding_a_method_and_an_event_is_compatible(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["methods"].append({"name": "session.fork", "params": [], "result": {"name": "r", "schema": {}}})
        d["x-events"]["session.forked"] = {"schema": {"type": "object"}}

    done = diff(tmp_path, "tui", edit)
    _compatible(done, "method session.fork: added")
    assert "event session.forked: added" in done.stdout


# -- input: what clients send ----------------------------------------------------------------
def test_adding_a_required_param_is_breaking(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["methods"][0]["params"].append({"name": "title", "required": True, "schema": {"type": "string"}})

    _breaking(diff(tmp_path, "tui", edit), "required param 'title' added")


def test_adding_an_optional_param_is_compatible(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["methods"][0]["params"].append({"name": "title", "schema": {"type": "string"}})

    _compatible(diff(tmp_path, "tui", edit), "optional param 'title' added")


def test_adding_a_required_body_field_is_breaking(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        body = d["paths"]["/v1/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        body["properties"]["session"] = {"type": "string"}
        body["required"].append("session")

    _breaking(diff(tmp_path, "api", edit), "required input field 'session' added")


def test_making_an_input_field_required_is_breaking(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["paths"]["/v1/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"][
            "required"
        ].append("model")

    _breaking(diff(tmp_path, "api", edit), "input field 'model' became required")


def test_an_input_constant_widened_to_its_type_is_compatible(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        body = d["paths"]["/v1/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        body["properties"]["flag"] = {"anyOf": [{"type": "boolean"}, {"type": "null"}]}

    def base(d: dict[str, Any]) -> None:
        body = d["paths"]["/v1/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        body["properties"]["flag"] = {"anyOf": [{"const": False}, {"type": "null"}]}

    _compatible(diff(tmp_path, "api", edit, base=base), "union variant False widened to boolean")


def test_an_output_constant_widened_to_its_type_is_breaking(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        _tui(d, "Done")["properties"]["flag"] = {"anyOf": [{"type": "boolean"}, {"type": "null"}]}

    def base(d: dict[str, Any]) -> None:
        _tui(d, "Done")["properties"]["flag"] = {"anyOf": [{"const": False}, {"type": "null"}]}

    _breaking(diff(tmp_path, "tui", edit, base=base), "union variant False widened to boolean")


def test_an_input_that_accepts_more_is_compatible(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        body = d["paths"]["/v1/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        body["properties"]["input"] = {"type": ["string", "array"]}

    _compatible(diff(tmp_path, "api", edit), "type 'array' added")


def test_api_removing_a_response_field_a_stream_event_or_an_operation_is_breaking(tmp_path: Path) -> None:
    def drop_field(d: dict[str, Any]) -> None:
        ok = d["paths"]["/v1/runs"]["post"]["responses"]["202"]["content"]["application/json"]["schema"]
        ok["properties"].pop("run_id")

    _breaking(diff(tmp_path / "a", "api", drop_field), "field 'run_id' removed")
    done = diff(
        tmp_path / "b", "api", lambda d: d["paths"]["/v1/runs"]["post"]["x-hermes-sse-events"].clear()
    )
    _breaking(done, "stream event run.completed: removed")
    _breaking(diff(tmp_path / "c", "api", lambda d: d["paths"].clear()), "operation POST /v1/runs: removed")


def test_api_adding_a_stream_event_field_is_compatible(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        event = d["paths"]["/v1/runs"]["post"]["x-hermes-sse-events"]["run.completed"]
        event["properties"]["usage"] = {"type": "object", "properties": {"total": {"type": "integer"}}}

    _compatible(diff(tmp_path, "api", edit), "optional field 'usage' added")


@pytest.mark.parametrize(
    ("definition", "breaking"),
    [
        ("PromptRequest", True),  # the agent receives it: a new required field breaks clients
        ("ReadTextFileResponse", True),  # the client answers it: the agent reads it
        ("PromptResponse", False),  # the agent sends it
        ("ReadTextFileRequest", False),  # the agent sends it to the client
    ],
)
def test_acp_direction_follows_x_side(tmp_path: Path, definition: str, breaking: bool) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["$defs"][definition]["properties"]["b"] = {"type": "string"}
        d["$defs"][definition]["required"].append("b")

    done = diff(tmp_path, "acp", edit)
    assert done.returncode == (1 if breaking else 0), done.stdout + done.stderr
    assert f"message {definition}" in done.stdout


def test_acp_removing_a_field_the_agent_sends_is_breaking(tmp_path: Path) -> None:
    done = diff(tmp_path, "acp", lambda d: d["$defs"]["PromptResponse"]["properties"].pop("a"))
    _breaking(done, "message PromptResponse: field 'a' removed")


# -- experimental surfaces, the gate, bad input ----------------------------------------------
def test_experimental_surfaces_are_left_out(tmp_path: Path) -> None:
    def mark(d: dict[str, Any]) -> None:
        d["x-events"]["message.delta"]["x-experimental"] = True
        d["methods"][0]["x-experimental"] = True

    base_marked = tmp_path / "marked"
    done = diff(base_marked, "tui", mark)
    assert done.returncode == 0, done.stdout
    # Once marked, removing them is not breaking.
    from tests.schema.diff_helpers import openrpc

    old = openrpc()
    mark(old)
    new = openrpc()
    mark(new)
    new["x-events"].pop("message.delta")
    new["methods"].clear()
    home = tmp_path / "home"
    home.mkdir()
    result = run_hermes(
        home, "schema", "diff", str(write(tmp_path / "o", tui=old)), str(write(tmp_path / "n", tui=new))
    )
    assert result.returncode == 0, result.stdout
    assert "BREAKING" not in result.stdout


def test_the_gate_passes_a_breaking_change_only_under_a_new_major(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["x-events"].pop("message.delta")

    same = diff(tmp_path / "same", "tui", edit, "--gate", version="1.1.0")
    _breaking(same, "event message.delta: removed")
    assert "without raising schema_version's major part" in same.stderr
    raised = diff(tmp_path / "raised", "tui", edit, "--gate", version="2.0.0")
    assert raised.returncode == 0, raised.stdout + raised.stderr
    assert "the major version was raised to 2" in raised.stdout
    plain = diff(tmp_path / "plain", "tui", edit, version="2.0.0")
    assert plain.returncode == 1  # without --gate a breaking change is always exit 1


def test_the_real_export_against_itself_has_no_changes(exported: Exported, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = run_hermes(home, "schema", "diff", str(exported.path), str(exported.path / "manifest.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("0 breaking, 0 compatible change(s)")


@pytest.mark.parametrize("what", ["folder", "file", "json", "format", "document"])
def test_a_path_that_is_not_an_export_exits_2_with_a_message(tmp_path: Path, what: str) -> None:
    good = write(tmp_path / "good", tui={"methods": []})
    bad = tmp_path / "bad"
    bad.mkdir()
    if what == "file":
        bad = tmp_path / "notes.txt"
        bad.write_text("hello", encoding="utf-8")
    elif what == "json":
        (bad / "manifest.json").write_text("{not json", encoding="utf-8")
    elif what == "format":
        (bad / "manifest.json").write_text(json.dumps({"openapi": "3.1.0"}), encoding="utf-8")
    elif what == "document":
        manifest = json.loads((good / "manifest.json").read_text(encoding="utf-8"))
        (bad / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")  # tui.json missing
    home = tmp_path / "home"
    home.mkdir()
    for args in ((str(good), str(bad)), (str(bad), str(good))):
        done = run_hermes(home, "schema", "diff", *args)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stdout == ""
        line = done.stderr.strip()
        assert line.startswith("Error: ") and str(bad) in line and "\n" not in line, line
        assert "Traceback" not in done.stderr


# -- typing what was not described -------------------------------------------------------------
def _untyped_then_typed(tmp_path: Path, reverse: bool = False) -> Any:
    from tests.schema.diff_helpers import openrpc

    untyped = openrpc()
    untyped["methods"].append(
        {
            "name": "clarify.respond",
            "params": [],
            "result": {"name": "result", "schema": {"type": "object"}},
            "x-typed": False,
        }
    )
    typed = json.loads(json.dumps(untyped))
    typed["methods"][-1] = {
        "name": "clarify.respond",
        "params": [
            {"name": "request_id", "required": True, "schema": {"type": "string"}},
            {"name": "answer", "required": True, "schema": {"type": "string"}},
        ],
        "result": {"name": "Delta", "schema": {"$ref": "#/components/schemas/Delta"}},
    }
    old, new = (typed, untyped) if reverse else (untyped, typed)
    home = tmp_path / "home"
    home.mkdir()
    return run_hermes(
        home, "schema", "diff", str(write(tmp_path / "old", tui=old)), str(write(tmp_path / "new", tui=new))
    )


def test_typing_an_untyped_method_is_compatible(tmp_path: Path) -> None:
    """`x-typed: false` → typed describes what the method always read: its required params are no
    new demand on clients (the gate must not call it breaking)."""
    _compatible(_untyped_then_typed(tmp_path), "method clarify.respond: params and result typed")


def test_untyping_a_typed_method_is_breaking(tmp_path: Path) -> None:
    _breaking(_untyped_then_typed(tmp_path, reverse=True), "method clarify.respond result")
