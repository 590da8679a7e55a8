"""Schema map, validation and wire invariants for the ACP tests (docs/reference/acp.md#wire-invariants).

Every agent-sent frame is validated with a Draft 2020-12 validator built per definition from the
schema export's ``acp`` document: the official ACP schema vendored in
``plugins/hermes_acp/acp_schema/`` plus Hermes' ``_meta`` types, whose ``_meta`` is checked too
(``session/fork`` from the vendored ``schema.unstable.json``); responses are paired with the
requests they answer by direction and id.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

import hermes_acp
from tests import wire_check

#: The vendored schema ships with the plugin (``hermes schema export`` reads it there).
SCHEMA_DIR = Path(hermes_acp.__file__).resolve().with_name("acp_schema")

#: client → agent methods: (request definition, response definition)
AGENT_METHODS: dict[str, tuple[str, str | None]] = {
    "initialize": ("InitializeRequest", "InitializeResponse"),
    "authenticate": ("AuthenticateRequest", "AuthenticateResponse"),
    "session/new": ("NewSessionRequest", "NewSessionResponse"),
    "session/load": ("LoadSessionRequest", "LoadSessionResponse"),
    "session/resume": ("ResumeSessionRequest", "ResumeSessionResponse"),
    "session/list": ("ListSessionsRequest", "ListSessionsResponse"),
    "session/close": ("CloseSessionRequest", "CloseSessionResponse"),
    "session/fork": ("unstable:ForkSessionRequest", "unstable:ForkSessionResponse"),
    "session/set_mode": ("SetSessionModeRequest", "SetSessionModeResponse"),
    "session/set_config_option": ("SetSessionConfigOptionRequest", "SetSessionConfigOptionResponse"),
    "session/set_model": ("", "legacy:SetModel"),
    "session/prompt": ("PromptRequest", "PromptResponse"),
}
#: agent → client requests and notifications: (params definition, client response definition)
CLIENT_METHODS: dict[str, tuple[str, str | None]] = {
    "session/update": ("SessionNotification", None),
    "session/request_permission": ("RequestPermissionRequest", "RequestPermissionResponse"),
    "fs/read_text_file": ("ReadTextFileRequest", "ReadTextFileResponse"),
    "fs/write_text_file": ("WriteTextFileRequest", "WriteTextFileResponse"),
    "$/cancel_request": ("CancelRequestNotification", None),
}


@cache
def _defs(which: str) -> dict[str, Any]:
    """Return the definitions: the stable ones from the schema export (the vendored schema plus
    Hermes' ``_meta`` types, tests/wire_check.py), the unstable ones from the vendored file."""
    if which != "unstable":
        stable: dict[str, Any] = wire_check.document("acp")["$defs"]
        return stable
    data: dict[str, Any] = json.loads((SCHEMA_DIR / "schema.unstable.json").read_text())
    return data["$defs"]


def _meta_problems(name: str, value: Any) -> list[str]:
    """Check the ``_meta`` Hermes sends with a message against the export's extension type."""
    ext = wire_check.document("acp")["x-meta-extensions"].get(name)
    if ext is None or not isinstance(value, dict):
        return []
    if "_meta" not in value:
        # Absent is the same as empty: fine when the type requires nothing (a prompt result
        # carries _meta.hermes only when a budget stopped the turn).
        if not wire_check.problems("acp", ext["$ref"].rsplit("/", 1)[1], {}):
            return []
        return [f"{name}: _meta missing (the export declares {ext['$ref']})"]
    return wire_check.problems("acp", ext["$ref"].rsplit("/", 1)[1], value["_meta"])


@cache
def validator(name: str) -> Draft202012Validator:
    """Return a validator for one definition (``unstable:`` prefix for the unstable schema).

    :param name: the definition name.
    :returns: the validator.
    """
    which, _, bare = name.rpartition(":")
    defs = _defs("unstable" if which == "unstable" else "stable")
    return Draft202012Validator({"$defs": defs, "$ref": f"#/$defs/{bare}"})


def _legacy_models(models: Any) -> list[str]:
    problems = []
    if not isinstance(models, dict) or not isinstance(models.get("currentModelId"), str):
        return ["models.currentModelId missing"]
    available = models.get("availableModels")
    if not isinstance(available, list):
        return ["models.availableModels missing"]
    for entry in available:
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("modelId"), str)
            and isinstance(entry.get("name"), str)
        ):
            problems.append(f"bad model entry {entry!r}")
    return problems


def check(name: str, value: Any) -> list[str]:
    """Validate a value against a definition; ``legacy:`` names use the docs/reference/acp.md#legacy-models
    shapes.

    :param name: the definition.
    :param value: the value.
    :returns: the problems (empty when valid).
    """
    if name == "legacy:SetModel":
        return [] if value == {} else [f"set_model result must be {{}}, got {value!r}"]
    problems = [f"{name}: {e.message} at {list(e.absolute_path)}" for e in validator(name).iter_errors(value)]
    problems += _meta_problems(name, value)
    if isinstance(value, dict) and "models" in value:
        problems += _legacy_models(value["models"])
    return problems


def validate_frames(frames: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Validate every agent-sent frame of a recording.

    :param frames: ``(direction, message)`` with direction ``"in"`` (agent → client, as the
        client received it) or ``"out"`` (client → agent).
    :returns: the problems found.
    """
    problems: list[str] = []
    client_requests: dict[Any, str] = {}
    agent_requests: dict[Any, str] = {}
    for direction, msg in frames:
        if direction == "out" and "method" in msg and "id" in msg:
            client_requests[_key(msg["id"])] = msg["method"]
        if direction == "in" and "method" in msg and "id" in msg:
            agent_requests[_key(msg["id"])] = msg["method"]
    for direction, msg in frames:
        if direction != "in":
            continue
        if msg.get("jsonrpc") != "2.0":
            problems.append(f"jsonrpc member missing: {msg!r:.200}")
        if "method" in msg:
            method = msg["method"]
            spec = CLIENT_METHODS.get(method)
            if spec is None:
                problems.append(f"agent sent an unexpected method {method}")
                continue
            problems += [f"{method}: {p}" for p in check(spec[0], msg.get("params"))]
        elif "error" in msg:
            problems += check("Error", msg["error"])
        elif "result" in msg:
            method = client_requests.get(_key(msg.get("id")))
            if method is None:
                problems.append(f"response to an unknown request id {msg.get('id')!r}")
                continue
            spec = AGENT_METHODS.get(method)
            if spec is None or spec[1] is None:
                problems.append(f"result for a method that has none: {method}")
                continue
            problems += [f"{method} result: {p}" for p in check(spec[1], msg["result"])]
        else:
            problems.append(f"frame is neither request nor response: {msg!r:.200}")
    return problems


def _key(request_id: Any) -> tuple[str, Any]:
    return (type(request_id).__name__, request_id)


def updates(frames: list[tuple[str, dict[str, Any]]], session_id: str | None = None) -> list[dict[str, Any]]:
    """Return the ``session/update`` payloads received, optionally for one session.

    :param frames: the recording.
    :param session_id: keep only this session's updates.
    :returns: the ``update`` objects in wire order.
    """
    out = []
    for direction, msg in frames:
        if direction == "in" and msg.get("method") == "session/update":
            params = msg.get("params") or {}
            if session_id is None or params.get("sessionId") == session_id:
                out.append(params.get("update") or {})
    return out


TURN_UPDATES = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
)
STATUS_ORDER = {"pending": 0, "in_progress": 1, "completed": 2, "failed": 2}


def invariants(frames: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Check the wire invariants of docs/reference/acp.md#wire-invariants on a whole recording.

    Tool calls: unique ids, absolute locations and diff paths, monotone statuses, exactly one
    final update, nothing after it; no turn update between a prompt response and the next prompt.

    :param frames: the recording.
    :returns: the problems found.
    """
    problems: list[str] = []
    prompt_ids: dict[Any, Any] = {}
    loads: dict[Any, Any] = {}
    idle: set[Any] = set()
    status: dict[tuple[Any, Any], str] = {}
    finals: dict[tuple[Any, Any], int] = {}
    for direction, msg in frames:
        if direction == "out" and msg.get("method") == "session/load":
            # A replay legitimately carries turn updates before the load response.
            session_id = (msg.get("params") or {}).get("sessionId")
            loads[_key(msg.get("id"))] = session_id
            idle.discard(session_id)
            continue
        if direction == "in" and "method" not in msg and _key(msg.get("id")) in loads:
            idle.add(loads.pop(_key(msg.get("id"))))
            continue
        if direction == "out" and msg.get("method") == "session/prompt":
            session_id = (msg.get("params") or {}).get("sessionId")
            prompt_ids[_key(msg.get("id"))] = session_id
            idle.discard(session_id)
            continue
        if direction == "in" and "method" not in msg and _key(msg.get("id")) in prompt_ids:
            session_id = prompt_ids.pop(_key(msg.get("id")))
            if session_id not in prompt_ids.values():
                idle.add(session_id)
            continue
        if direction != "in" or msg.get("method") != "session/update":
            continue
        params = msg.get("params") or {}
        session_id = params.get("sessionId")
        update = params.get("update") or {}
        kind = update.get("sessionUpdate")
        if kind in TURN_UPDATES and session_id in idle:
            problems.append(f"{kind} for {session_id} after its prompt response")
        if kind in ("tool_call", "tool_call_update"):
            call = (session_id, update.get("toolCallId"))
            for loc in update.get("locations") or []:
                if not os.path.isabs(loc.get("path", "")) or ".." in Path(loc.get("path", "")).parts:
                    problems.append(f"non-absolute location {loc!r}")
            for block in update.get("content") or []:
                if block.get("type") == "diff" and not os.path.isabs(block.get("path", "")):
                    problems.append(f"non-absolute diff path {block.get('path')!r}")
            if kind == "tool_call":
                if call in status and call not in finals:
                    problems.append(f"duplicate toolCallId {call[1]}")
                status[call] = "pending"
                finals.pop(call, None)
                continue
            new = update.get("status")
            if call in finals:
                problems.append(f"update after the final one for {call[1]}: {update!r:.200}")
            if new is None:
                continue
            old = status.get(call, "pending")
            if STATUS_ORDER[new] < STATUS_ORDER[old]:
                problems.append(f"status of {call[1]} went back from {old} to {new}")
            status[call] = new
            if new in ("completed", "failed"):
                finals[call] = finals.get(call, 0) + 1
    for call, value in status.items():
        if value not in ("completed", "failed"):
            problems.append(f"tool call {call[1]} never closed (last status {value})")
    return problems
