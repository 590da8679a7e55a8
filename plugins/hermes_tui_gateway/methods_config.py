"""Configuration and models (docs/reference/tui-gateway.md#configuration-and-models): ``config.get``,
``config.set``, ``model.options``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from hermes_core import ModelRef
from hermes_tui_gateway import wire_params_ops as wp
from hermes_tui_gateway import wire_results_ops as wr
from hermes_tui_gateway.config_setters import SETTERS, Change, set_display
from hermes_tui_gateway.gitinfo import git_branch
from hermes_tui_gateway.params import GatewayError, bad, truthy

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Live, Params

DISPLAY_KEYS = (
    "skin",
    "theme",
    "statusbar",
    "mouse",
    "indicator",
    "details_mode",
    "thinking_mode",
    "density",
    "compact",
)
#: ``details_mode.<section>``: the Ink TUI's per-section detail overrides, kept as display keys.
DETAIL_SECTIONS = ("thinking", "tools", "subagents", "activity")
ALIASES = {"approvals.mode": "approval_mode", "terminal.cwd": "cwd", "workdir": "cwd"}
KEYS = (
    "model",
    "provider",
    "approval_mode",
    "yolo",
    "busy",
    "reasoning",
    "cwd",
    "verbose",
    "full",
    "mtime",
    "fast",
    *DISPLAY_KEYS,
)


def _key(key: str) -> str:
    key = ALIASES.get(key, key)
    section = key.removeprefix("details_mode.")
    if section != key and section in DETAIL_SECTIONS:
        return f"details_mode_{section}"
    if key not in KEYS:
        raise GatewayError(4002, f"unknown config key: {key}")
    return key


def _optional_live(gw: Gateway, sid: str) -> Live | None:
    return gw.live(sid) if sid else None


def config_get(gw: Gateway, conn: Conn, p: Params) -> wr.ConfigValue:
    """``config.get`` (fast path)."""
    q = wp.parse(wp.ConfigGetParams, p)
    key = _key(q.key)
    live = _optional_live(gw, q.session_id)
    kernel = gw.kernel
    store = kernel.store
    session = live.session if live else None
    info = session.info() if session else None
    if key == "model":
        ref = info.model if info else kernel.default_model
        parts = ModelRef.split(ref)
        return {"value": ref, "model": parts.model or None, "provider": parts.provider}
    if key == "provider":
        ref = info.model if info else kernel.default_model
        parts = ModelRef.split(ref)
        names = kernel.providers.names()
        return {"model": parts.model or None, "provider": parts.provider, "providers": names}
    if key in ("approval_mode", "yolo"):
        profile = info.profile if info else gw.settings.approval_profile
        if key == "yolo":
            return {"value": "1" if profile == "off" else "0"}
        return {"value": profile}
    if key == "busy":
        return {"value": live.busy_policy if live else gw.settings.busy_policy}
    if key == "reasoning":
        effort = info.reasoning_effort if info else kernel.settings.reasoning_effort
        return {"value": effort, "display": live.reasoning_display if live else "show"}
    if key == "cwd":
        cwd = info.cwd if info else os.getcwd()
        return {"value": cwd, "cwd": cwd, "branch": git_branch(cwd)}
    if key == "verbose":
        return {"value": live.stream.verbose if live else gw.default_verbose}
    if key == "fast":
        return {"key": "fast", "value": "normal"}  # no priority service tier here
    if key == "full":
        config = store.load() if store is not None else {}
        return {"config": _redacted(dict(config))}
    if key == "mtime":
        path = getattr(store, "config_path", None)
        try:
            mtime = path.stat().st_mtime if path else None
        except OSError:
            mtime = None
        return {"mtime": mtime}
    if live is not None and f"tui.display.{key}" in live.session.extra:
        return {"value": live.session.extra[f"tui.display.{key}"]}
    return {"value": store.get(f"display.{key}") if store is not None else None}


def _redacted(config: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in config.items():
        if isinstance(v, dict):
            out[k] = _redacted(v)
        elif any(word in k.lower() for word in ("key", "token", "secret", "password")):
            out[k] = "***"
        else:
            out[k] = v
    return out


async def config_set(gw: Gateway, conn: Conn, p: Params) -> wr.ConfigValue:
    """``config.set``: session-scoped with a ``session_id``, else written to ``config.toml``."""
    q = wp.parse(wp.ConfigSetParams, p)
    key = _key(q.key)
    value = q.value
    if "value" not in p and key == "yolo":
        value = _toggled_yolo(gw, q.session_id)
    elif "value" not in p:
        raise bad("value", "present")
    sid = q.session_id
    live = await gw.live_checked(sid) if sid else None
    scope = q.scope
    if scope is not None and scope not in ("session", "global"):
        raise GatewayError(
            4002, f"invalid scope: {scope}", {"key": "scope", "allowed": ["session", "global"]}
        )
    if key in ("full", "mtime"):
        raise GatewayError(4002, f"{key} is read-only", {"key": key, "allowed": []})
    if key == "fast":
        return _set_fast(value)
    change = Change(gw, live, key, value, scope, sid)
    result = await SETTERS.get(key, set_display)(change)
    if live is not None:
        live.stream.emit_info(force=True)
    return result


def _toggled_yolo(gw: Gateway, sid: str) -> str:
    """The ``yolo`` value a ``config.set`` without ``value`` means: the opposite of the current one."""
    live = _optional_live(gw, sid)
    profile = live.session.info().profile if live else gw.settings.approval_profile
    return "0" if profile == "off" else "1"


def _set_fast(value: Any) -> wr.ConfigValue:
    """``config.set fast``: there is no priority tier, so only ``normal`` (and asking) succeeds."""
    raw = str(value or "").strip().lower()
    if raw in ("status", "normal", "off"):
        return {"key": "fast", "value": "normal"}
    if raw in ("", "toggle", "fast", "on"):
        raise GatewayError(4002, "fast mode is not available for this model", {"key": "fast"})
    raise GatewayError(4002, f"unknown fast mode: {value}", {"key": "fast", "allowed": ["normal", "fast"]})


def setup_status(gw: Gateway, conn: Conn, p: Params) -> wr.SetupStatus:
    """``setup.status``: whether a model is configured (the offline fallback does not count)."""
    wp.parse(wp.NoParams, p)
    return {"provider_configured": gw.kernel.models.has_usable_provider()}


async def model_options(gw: Gateway, conn: Conn, p: Params) -> wr.ModelOptions:
    """``model.options``: the core's catalog with its probe policy."""
    q = wp.parse(wp.ModelOptionsParams, p)
    sid = q.session_id
    live = await gw.live_checked(sid) if sid else None
    refresh = truthy(q.refresh)
    try:
        catalog = await gw.kernel.model_catalog(
            refresh=refresh, session=live.session if live else None, prices=True
        )
    except Exception as exc:
        raise GatewayError(5033, f"model.options failed: {type(exc).__name__}") from exc
    # The core's catalog as is (the same payload as GET /api/model/options), plus `warning`.
    providers = []
    for row in catalog.get("providers", []):
        item = dict(row)
        probe = row.get("probe") or {}
        if probe.get("status") == "failed":
            item["warning"] = str(probe.get("error") or "probe failed")
        providers.append(item)
    out: wr.ModelOptions = {
        "model": catalog.get("model"),
        "provider": catalog.get("provider"),
        "refreshed": bool(catalog.get("refreshed")),
        "providers": providers,
    }
    if "pricing_sources" in catalog:
        out["pricing_sources"] = list(catalog["pricing_sources"])
    return out


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""
    gw.fast["config.get"] = lambda conn, p: config_get(gw, conn, p)
    gw.fast["setup.status"] = lambda conn, p: setup_status(gw, conn, p)
    gw.slow.update(
        {
            "config.set": lambda conn, p: config_set(gw, conn, p),
            "model.options": lambda conn, p: model_options(gw, conn, p),
        }
    )
