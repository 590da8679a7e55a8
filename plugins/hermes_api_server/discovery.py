"""Health, models, model options and capabilities (docs/reference/api-server.md#discovery)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from hermes_api_server import browser_control
from hermes_api_server.errors import ApiError, json_response
from hermes_api_server.state import get_state
from hermes_core import schema_stamp

if TYPE_CHECKING:
    from hermes_api_server.state import ServerState

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


async def health(request: web.Request) -> web.Response:
    """Return the liveness probe; does no I/O."""
    state = get_state(request)
    return json_response({"status": "ok", "platform": "hermes-agent", "version": state.version})


async def health_detailed(request: web.Request) -> web.Response:
    """Return readiness checks and server counters."""
    state = get_state(request)
    checks: dict[str, Any] = {}
    # One read through the backend, plus what it reports (server, schema, pool use).
    checks["storage"] = await state.kernel.sessions.storage_report()
    model = state.kernel.model_status()
    checks["default_model"] = {"ok": bool(model.model) and model.problem is None, "model": model.model}
    checks["default_model"]["source"] = model.source  # "fallback": nothing configured, mock:echo
    if model.fallback:
        checks["default_model"]["warning"] = "no model configured: the offline mock model only echoes"
    if model.problem is not None:
        checks["default_model"]["error"] = model.problem
    checks["event_loop"] = {"ok": state.loop_lag_ms < 1000, "lag_ms": round(state.loop_lag_ms, 2)}
    checks["bus"] = await state.runs.bus.diagnostics()
    ok = all(check["ok"] for check in checks.values())
    runs = state.runs
    # Without storage nothing works: a load balancer must take this instance out (503).
    return json_response(
        {
            "status": "ok" if ok else "degraded",
            "platform": "hermes-agent",
            "version": state.version,
            "pid": os.getpid(),
            "readiness": {"checks": checks},
            "api_server": {
                "host": state.host,
                "port": state.port,
                "uptime_s": round(time.time() - state.started_at, 3),
                "active_turns": state.active_turns,
                "queued_runs": runs.count("queued"),
                "active_runs": runs.non_terminal_count(),
                "stored_runs": runs.stored_count(),
                "run_subscribers": runs.subscriber_count(),
                "last_request_at": state.last_request_iso(),
                "workspace": _workspace_info(state),
            },
        },
        status=200 if checks["storage"]["ok"] and checks["bus"]["ok"] else 503,
    )


def _workspace_info(state: ServerState) -> dict[str, str]:
    """Say where new sessions' tools work: one fixed directory, or a folder per session."""
    fixed = state.pool.default_workspace
    if fixed is not None:
        return {"mode": "fixed", "path": str(fixed)}
    return {"mode": "per_session", "path": str(state.pool.workspaces)}


def _model_entries(state: ServerState) -> list[dict[str, Any]]:
    created = int(state.started_at)
    name = state.settings.model_name
    entries = [
        {
            "id": name,
            "object": "model",
            "created": created,
            "owned_by": "hermes",
            "permission": [],
            "root": name,
            "parent": None,
        }
    ]
    for alias, target in state.settings.model_aliases.items():
        entries.append(
            {
                "id": alias,
                "object": "model",
                "created": created,
                "owned_by": "hermes",
                "permission": [],
                "root": target,
                "parent": name,
            }
        )
    return entries


async def list_models(request: web.Request) -> web.Response:
    """Return the virtual model and the aliases."""
    return json_response({"object": "list", "data": _model_entries(get_state(request))})


async def retrieve_model(request: web.Request) -> web.Response:
    """Return one model entry, or 404 ``model_not_found``."""
    wanted = request.match_info["model"]
    for entry in _model_entries(get_state(request)):
        if entry["id"] == wanted:
            return json_response(entry)
    raise ApiError(404, "model_not_found", f"Model not found: {wanted}", param="model")


async def model_options(request: web.Request) -> web.Response:
    """Return the core's model catalog (the picker inventory)."""
    state = get_state(request)
    refresh = request.query.get("refresh", "").strip().lower() in TRUE_WORDS
    try:
        catalog = await state.kernel.model_catalog(refresh=refresh, prices=True)
    except Exception:
        raise ApiError(500, "model_options_failed", "Building the model catalog failed") from None
    payload = {"object": "hermes.model_options", **dict(catalog)}
    payload.setdefault("refreshed", refresh)
    return json_response(payload)


def endpoint_map(state: ServerState) -> dict[str, dict[str, str]]:
    """Return name → {method, path} for every route this process serves."""
    routes = {
        "health": ("GET", "/health"),
        "health_v1": ("GET", "/v1/health"),
        "health_detailed": ("GET", "/health/detailed"),
        "models": ("GET", "/v1/models"),
        "model": ("GET", "/v1/models/{model}"),
        "model_options": ("GET", "/api/model/options"),
        "capabilities": ("GET", "/v1/capabilities"),
        "openapi": ("GET", "/openapi.json"),
        "chat_completions": ("POST", "/v1/chat/completions"),
        "responses": ("POST", "/v1/responses"),
        "response": ("GET", "/v1/responses/{response_id}"),
        "response_delete": ("DELETE", "/v1/responses/{response_id}"),
        "response_input_items": ("GET", "/v1/responses/{response_id}/input_items"),
        "response_cancel": ("POST", "/v1/responses/{response_id}/cancel"),
        "runs": ("POST", "/v1/runs"),
        "run": ("GET", "/v1/runs/{run_id}"),
        "run_events": ("GET", "/v1/runs/{run_id}/events"),
        "run_steer": ("POST", "/v1/runs/{run_id}/steer"),
        "run_approval": ("POST", "/v1/runs/{run_id}/approval"),
        "run_stop": ("POST", "/v1/runs/{run_id}/stop"),
    }
    if state.settings.browser_control.enabled:
        routes["browser_control_register"] = ("POST", "/v1/browser-control/register")
        routes["browser_control_ws"] = ("GET", "/v1/browser-control/ws")
    return {name: {"method": method, "path": path} for name, (method, path) in routes.items()}


async def capabilities(request: web.Request) -> web.Response:
    """Return what this process does, computed from its code and settings."""
    state = get_state(request)
    s = state.settings
    features: dict[str, Any] = {
        "chat_completions": True,
        "chat_completions_streaming": True,
        "responses_api": True,
        "responses_streaming": True,
        "responses_store": True,
        "run_submission": True,
        "run_status": True,
        "run_events_sse": True,
        "run_events_replay": {
            "supported": True,
            "journal_max_events": s.run_journal_events,
            "retention_seconds": s.run_journal_retention_s,
            "cursor": ["Last-Event-ID", "after"],
        },
        "runs_idempotency": {
            "supported": True,
            "durable": True,
            "retention_seconds": s.run_status_retention_s,
        },
        "run_stop": True,
        "run_steer": True,
        "run_approval_response": True,
        "approval_events": True,
        "approval_choices": ["once", "session", "always", "deny"],
        "tool_progress_events": s.tool_progress_events,
        "reasoning_streaming": s.show_reasoning,
        "model_options": True,
        "direct_model_requests": s.direct_model_requests,
        "client_tools": False,
        "structured_outputs": False,
        "cors": bool(s.cors_origins),
        "session_resources": False,
        "session_chat": False,
        "session_chat_streaming": False,
        "session_fork": False,
        "session_model_lock": False,
        "skills_api": False,
        "jobs_admin": False,
        "admin_config_rw": False,
        "memory_write_api": False,
        "audio_api": False,
        "realtime_voice": False,
        "session_continuity_header": "X-Hermes-Session-Id",
        "session_key_header": "X-Hermes-Session-Key",
        "browser_extension_control": {
            "enabled": s.browser_control.enabled,
            "protocol_version": 1,
            "developer_mode": s.browser_control.developer_mode,
            "capabilities": list(browser_control.ALLOWED),
            "developer_capabilities": list(browser_control.DEVELOPER),
            "transports": {"local_vps": "websocket-subprotocol-ticket"},
        },
    }
    return json_response(
        {
            "object": "hermes.api_server.capabilities",
            "platform": "hermes-agent",
            "version": state.version,
            "model": s.model_name,
            "auth": {"type": "bearer", "required": True},
            "runtime": {"mode": "server_agent", "tool_execution": "server", "split_runtime": False},
            "features": features,
            "endpoints": endpoint_map(state),
            "schema": schema_stamp(),
        }
    )
