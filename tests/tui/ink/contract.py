"""The fields upstream's Ink TUI (hermes-agent 0.19.0) reads from our frames, and a checker.

The table was written by reading the bundle (``hermes_cli/tui_dist/entry.js``: its event
handler, session lifecycle, slash commands, pickers and panels) and upstream's
``tui_gateway/server.py`` (what it sends for each of those). A field listed bare must be present
with that type: the TUI dereferences it unguarded (``Object.entries(info.tools)``,
``info.model.split``, ``s.model.replace``) or shows it. :class:`Opt` fields may be absent but
must have the type when present. The Ink TUI tests check every frame of every flow against it;
``tests/tui/test_ink_contract.py`` does the same for scripted flows without Node.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

NUM = (int, float)


@dataclass(frozen=True)
class Opt:
    """A field that may be absent."""

    spec: Any


@dataclass(frozen=True)
class Null:
    """A value that may be JSON null."""

    spec: Any


@dataclass(frozen=True)
class ListOf:
    """A JSON array whose items match ``spec``."""

    spec: Any


@dataclass(frozen=True)
class MapOf:
    """A JSON object whose values all match ``spec``."""

    spec: Any


@dataclass(frozen=True)
class Check:
    """A value checked by a function returning what is wrong with it (empty when it is right)."""

    fn: Callable[[Any], list[str]]


ANY = object()

USAGE = {
    "input": int,
    "output": int,
    "total": int,
    "calls": Opt(int),
    "context_used": Opt(int),
    "context_max": Opt(int),
    "context_percent": Opt(NUM),
}
MCP_SERVER = {"name": str, "transport": str, "connected": bool, "tools": int, "status": Opt(str)}
SESSION_INFO = {
    "model": str,  # info.model.split("/")
    "tools": MapOf(ListOf(str)),  # Object.entries(info.tools)
    "skills": MapOf(ListOf(str)),  # Object.entries(info.skills)
    "cwd": str,
    "version": Opt(str),
    "usage": Opt(USAGE),
    "mcp_servers": Opt(ListOf(MCP_SERVER)),
    "running": Opt(bool),
    "lazy": Opt(bool),
    "system_prompt": Opt(str),
    "update_behind": Opt(Null(int)),
    "release_date": Opt(str),
    "update_command": Opt(str),
    "credential_warning": Opt(str),
    "config_warning": Opt(str),
    "install_warning": Opt(str),
    "profile_name": Opt(Null(str)),
    "project": Opt(Null({"name": Opt(str)})),
    "reasoning_effort": Opt(Null(str)),
    "fast": Opt(bool),
    "service_tier": Opt(str),
}
MESSAGE = {"role": str, "text": Null(str), "name": Opt(Null(str)), "context": Opt(str)}
SUBAGENT = {
    "subagent_id": str,
    "goal": str,
    "task_index": int,
    "task_count": int,
    "depth": int,
    "parent_id": Null(str),
    "model": Null(str),
    "status": str,
}
ITEM = {"text": str, "display": str, "meta": Opt(str)}
SNAPSHOT = {
    "session_id": str,
    "info": SESSION_INFO,
    "messages": ListOf(MESSAGE),
    "running": bool,
    "status": str,
    "started_at": NUM,
}

#: Event type -> payload fields.
EVENTS: dict[str, dict[str, Any]] = {
    "gateway.ready": {"skin": Opt(dict)},
    "session.info": SESSION_INFO,
    "message.start": {},
    "message.delta": {"text": str},
    "message.complete": {"text": str, "status": str, "usage": Opt(USAGE), "reasoning": Opt(str)},
    "reasoning.delta": {"text": str},
    "status.update": {"kind": Opt(str), "text": str},
    "tool.start": {"tool_id": str, "name": str, "context": str, "todos": Opt(list), "args_text": Opt(str)},
    "tool.progress": {"name": str, "preview": str},
    "tool.complete": {
        "tool_id": str,
        "name": str,
        "summary": Opt(str),
        "duration_s": Opt(NUM),
        "error": Opt(bool),
        "inline_diff": Opt(str),
        "todos": Opt(list),
        "result_text": Opt(str),
    },
    "clarify.request": {"request_id": str, "question": str, "choices": Null(ListOf(str))},
    "approval.request": {
        "command": str,
        "description": str,
        "choices": Opt(ListOf(str)),
        "allow_permanent": Opt(bool),
    },
    "sudo.request": {"request_id": str},
    "secret.request": {"request_id": str, "env_var": str, "prompt": str},
    "sudo.expire": {"request_id": str},
    "secret.expire": {"request_id": str},
    "background.complete": {"task_id": str, "text": str},
    "subagent.spawn_requested": SUBAGENT,
    "subagent.start": SUBAGENT,
    "subagent.thinking": {**SUBAGENT, "text": str},
    "subagent.progress": {**SUBAGENT, "text": str},
    "subagent.tool": {**SUBAGENT, "tool_name": str},
    "subagent.complete": {**SUBAGENT, "summary": Null(str), "duration_seconds": Opt(NUM)},
    "error": {"message": str},
}


def _dispatch(value: Any) -> list[str]:
    """What the TUI's ``asCommandDispatch`` accepts; anything else it prints as
    "invalid response: command.dispatch"."""
    needs = {"exec": None, "plugin": None, "alias": "target", "skill": "name", "send": "message"}
    needs["prefill"] = "message"
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in needs:
        return [f"type {kind!r} is none the TUI knows"]
    field = needs[kind]
    if field is not None and not isinstance(value.get(field), str):
        return [f"type {kind!r} without a string {field!r}"]
    if kind in ("exec", "plugin") and not isinstance(value.get("output", ""), str):
        return ["output: expected str"]
    return []


def _config_get(params: Mapping[str, Any]) -> dict[str, Any]:
    key = params.get("key")
    if key == "full":
        return {"config": dict}
    if key == "mtime":
        return {"mtime": Null(NUM)}
    return {"value": ANY}


def _config_set(params: Mapping[str, Any]) -> dict[str, Any]:
    if params.get("key") == "model":
        return {"value": str, "warning": Opt(Null(str))}
    return {"value": ANY}


ResultSpec = dict[str, Any] | Check | Callable[[Mapping[str, Any]], dict[str, Any]]

#: Method -> result fields (or a function of the request params returning them).
RESULTS: dict[str, ResultSpec] = {
    "setup.status": {"provider_configured": bool},
    "session.create": {"session_id": str, "info": SESSION_INFO},
    "session.resume": {**SNAPSHOT, "resumed": Opt(str)},
    "session.activate": {**SNAPSHOT, "session_key": Opt(str)},
    "session.most_recent": {"session_id": Null(str)},
    "session.active_list": {
        "sessions": ListOf({"id": str, "title": Null(str), "status": str, "model": str, "current": bool})
    },
    "session.list": {
        "sessions": ListOf(
            {"id": str, "title": Null(str), "preview": Null(str), "started_at": NUM, "message_count": int}
        )
    },
    "session.close": {"closed": bool},
    "session.undo": {"removed": int},
    "session.save": {"file": str},
    "session.compress": {
        "removed": int,
        "messages": Opt(ListOf(MESSAGE)),
        "info": Opt(SESSION_INFO),
        "usage": Opt(USAGE),
    },
    "session.status": {"output": str},
    "session.title": {"title": str, "pending": Opt(bool)},
    "session.usage": {"calls": int, "input": int, "output": int, "total": int},
    "session.branch": {"session_id": str, "title": Opt(Null(str))},
    "session.steer": {"status": str},
    "prompt.background": {"task_id": str},
    "commands.catalog": {
        "pairs": ListOf(ListOf(str)),
        "canon": MapOf(str),
        "categories": ListOf({"name": str, "pairs": ListOf(ListOf(str))}),
        "skill_count": int,
        "sub": MapOf(ListOf(str)),
        "warning": Opt(str),
    },
    "complete.slash": {"items": ListOf(ITEM), "replace_from": Opt(int)},
    "complete.path": {"items": ListOf(ITEM)},
    "input.detect_drop": {"matched": bool, "text": Opt(str), "is_image": Opt(bool), "name": Opt(str)},
    "model.options": {
        "model": Null(str),
        "providers": ListOf(
            {
                "slug": str,
                "name": str,
                "models": ListOf(str),
                "is_current": bool,
                "authenticated": bool,
                "total_models": Opt(int),
                "warning": Opt(str),
            }
        ),
    },
    "config.get": _config_get,
    "config.set": _config_set,
    "delegation.status": {
        "max_spawn_depth": Opt(int),
        "max_concurrent_children": Opt(int),
        "paused": Opt(bool),
    },
    "pet.cells": {"enabled": bool},
    "command.dispatch": Check(_dispatch),
    "slash.exec": {"output": Opt(str), "warning": Opt(str)},
    "session.delete": {"deleted": str},
    "process.stop": {"killed": int},
    "reload.env": {"updated": int},
    "spawn_tree.list": {"entries": Opt(ListOf({"path": str, "count": int}))},
    "spawn_tree.load": {"subagents": Opt(list)},
    "delegation.pause": {"paused": bool},
    "subagent.interrupt": {"found": bool},
    "shell.exec": {"stdout": str, "stderr": str, "code": int},
    "image.attach": {"name": str, "count": int},
    "clipboard.paste": {"attached": bool},
}


#: Every method the Ink TUI calls, read from the bundle. Each gets a real answer or the
#: "feature off" one (plugins/hermes_tui_gateway/feature_off.py), never -32601;
#: ``tests/tui/ink/test_ink_start.py`` checks the bundle calls nothing else.
INK_TUI_METHODS = (
    "approval.respond", "billing.auto_reload", "billing.charge", "billing.charge_status",
    "billing.state", "billing.step_up", "browser.manage", "clarify.respond", "clipboard.paste",
    "command.dispatch", "commands.catalog", "complete.path", "complete.slash", "config.get",
    "config.set", "delegation.pause", "delegation.status", "image.attach", "input.detect_drop",
    "learning.delete", "learning.detail", "learning.edit", "learning.frames", "model.disconnect",
    "model.options", "model.save_key", "paste.collapse", "pet.cells", "pet.gallery", "pet.select",
    "plugins.manage", "process.stop", "prompt.background", "prompt.submit", "reload.env",
    "reload.mcp", "rollback.diff", "rollback.list", "rollback.restore", "secret.respond",
    "session.activate", "session.active_list", "session.branch", "session.close",
    "session.compress", "session.create", "session.delete", "session.interrupt", "session.list",
    "session.most_recent", "session.resume", "session.save", "session.status", "session.steer",
    "session.title", "session.undo", "session.usage", "setup.status", "shell.exec",
    "skills.manage", "skills.reload", "slash.exec", "spawn_tree.list", "spawn_tree.load",
    "spawn_tree.save", "subagent.interrupt", "subscription.change", "subscription.preview",
    "subscription.resume", "subscription.state", "subscription.upgrade", "sudo.respond",
    "terminal.resize", "tools.configure", "voice.record", "voice.toggle",
)  # fmt: skip
_CALL = re.compile(r"""(?:\brpc\(|\.request\(|\bmethod:)\s*["']([a-z_]+(?:\.[a-z_]+)+)["']""")


def methods_called(bundle_source: str) -> set[str]:
    """Return the JSON-RPC methods a bundle calls by name (``rpc("x.y"``, ``gw.request("x.y"``,
    and the completer's ``{method: "x.y"}``)."""
    return set(_CALL.findall(bundle_source))


def problems(value: Any, spec: Any, where: str) -> list[str]:
    """Return what is wrong with ``value`` against ``spec`` (empty when it matches)."""
    if spec is ANY:
        return []
    if isinstance(spec, Check):
        return [f"{where}: {problem}" for problem in spec.fn(value)]
    if isinstance(spec, Null):
        return [] if value is None else problems(value, spec.spec, where)
    if isinstance(spec, ListOf):
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        out: list[str] = []
        for i, item in enumerate(value):
            out += problems(item, spec.spec, f"{where}[{i}]")
        return out
    if isinstance(spec, MapOf):
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        out = []
        for key, item in value.items():
            out += problems(item, spec.spec, f"{where}.{key}")
        return out
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        out = []
        for key, field in spec.items():
            optional = isinstance(field, Opt)
            inner = field.spec if optional else field
            if key not in value:
                if not optional:
                    out.append(f"{where}.{key}: missing")
                continue
            out += problems(value[key], inner, f"{where}.{key}")
        return out
    types = spec if isinstance(spec, tuple) else (spec,)
    if bool not in types and isinstance(value, bool):
        return [f"{where}: expected {'/'.join(t.__name__ for t in types)}, got bool"]
    if not isinstance(value, types):
        return [f"{where}: expected {'/'.join(t.__name__ for t in types)}, got {type(value).__name__}"]
    return []


def check_frames(requests: Mapping[Any, Mapping[str, Any]], sent: list[Mapping[str, Any]]) -> list[str]:
    """Check every frame the gateway sent.

    :param requests: the requests the client sent, by id (for ``method`` and ``params``).
    :param sent: the gateway's frames in order.
    :returns: one line per problem.
    """
    out: list[str] = []
    for frame in sent:
        if frame.get("method") == "event":
            params = frame.get("params") or {}
            type_ = params.get("type")
            spec = EVENTS.get(str(type_))
            if spec is not None:
                out += problems(params.get("payload", {}), spec, f"event {type_}")
            continue
        if "result" not in frame:
            continue
        request = requests.get(frame.get("id"))
        if request is None:
            continue
        method = str(request.get("method"))
        rule = RESULTS.get(method)
        if rule is None:
            continue
        spec = rule if isinstance(rule, Check | dict) else rule(request.get("params") or {})
        out += problems(frame["result"], spec, f"result of {method}")
    return out


class _Recording(Protocol):
    def requests(self, method: str | None = None) -> list[dict[str, Any]]: ...

    def sent(self) -> list[dict[str, Any]]: ...


def check_recording(recording: _Recording) -> list[str]:
    """Check a recorded TUI session (see :class:`tests.tui.ink.screen.Recording`)."""
    requests = {r.get("id"): r for r in recording.requests()}
    return check_frames(requests, recording.sent())
