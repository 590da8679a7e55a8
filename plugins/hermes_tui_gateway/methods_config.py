"""Configuration and models (docs/reference/tui-gateway.md#configuration-and-models): ``config.get``,
``config.set``, ``model.options``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import InvalidValue, ModelAmbiguous, ModelNotFound
from hermes_tui_gateway.gitinfo import git_branch
from hermes_tui_gateway.params import GatewayError, bad, session_id, truthy
from hermes_tui_gateway.stream import VERBOSE

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Live, Params

PROFILES = ("default", "accept_edits", "ask_everything", "off")
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
BUSY = ("queue", "steer", "interrupt")
DISPLAY_KEYS = (
    "skin",
    "theme",
    "statusbar",
    "mouse",
    "indicator",
    "details_mode",
    "thinking_mode",
    "density",
)
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
    *DISPLAY_KEYS,
)


def _key(p: Params) -> str:
    key = p.get("key")
    if not isinstance(key, str):
        raise bad("key", "string")
    key = ALIASES.get(key, key)
    if key not in KEYS:
        raise GatewayError(4002, f"unknown config key: {key}")
    return key


def _optional_live(gw: Gateway, p: Params) -> Live | None:
    sid = session_id(p)
    return gw.live(sid) if sid else None


def _store(gw: Gateway) -> Any:
    store = gw.kernel.store
    if store is None:
        raise GatewayError(5001, "config write failed: no settings store")
    return store


def config_get(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``config.get`` (fast path)."""
    key = _key(p)
    live = _optional_live(gw, p)
    kernel = gw.kernel
    store = kernel.store
    session = live.session if live else None
    info = session.info() if session else None
    if key == "model":
        ref = info.model if info else kernel.default_model
        provider, _, model = (ref or "").partition(":")
        return {"value": ref, "model": model or None, "provider": provider or None}
    if key == "provider":
        ref = info.model if info else kernel.default_model
        provider, _, model = (ref or "").partition(":")
        return {"model": model or None, "provider": provider or None, "providers": kernel.hub.names()}
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


async def _switch(gw: Gateway, live: Live, raw: str) -> dict[str, Any]:
    words = raw.split()
    scope = "session"
    if "--global" in words:
        scope = "global"
    elif "--once" in words:
        scope = "once"
    refs = [w for w in words if not w.startswith("--")]
    if len(refs) != 1:
        raise GatewayError(4002, "give one model reference", {"key": "model", "allowed": []})
    if live.session.busy:
        raise GatewayError(4009, "session busy", {"reason": "busy"})
    try:
        done = await live.session.switch_model(refs[0], scope=scope)  # type: ignore[arg-type]
    except (ModelAmbiguous, ModelNotFound) as exc:
        raise GatewayError(4002, str(exc), {"key": "model", "candidates": list(exc.candidates)}) from exc
    except InvalidValue as exc:
        raise GatewayError(4002, str(exc), {"key": "model", "allowed": []}) from exc
    return {
        "key": "model",
        "value": done.ref,
        "model": done.model,
        "provider": done.provider,
        "scope": scope,
        "warning": None,
    }


async def _switch_default(gw: Gateway, raw: str) -> dict[str, Any]:
    """``config.set model`` without a session: the default model, written to ``config.toml``."""
    refs = [w for w in raw.split() if not w.startswith("--")]
    if len(refs) != 1:
        raise GatewayError(4002, "give one model reference", {"key": "model", "allowed": []})
    try:
        done = await gw.kernel.set_default_model(refs[0])
    except (ModelAmbiguous, ModelNotFound) as exc:
        raise GatewayError(4002, str(exc), {"key": "model", "candidates": list(exc.candidates)}) from exc
    except InvalidValue as exc:
        raise GatewayError(5001, f"could not write config.toml: {exc}") from exc
    return {
        "key": "model",
        "value": done.ref,
        "model": done.model,
        "provider": done.provider,
        "scope": "global",
        "warning": None,
    }


async def config_set(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``config.set``: session-scoped with a ``session_id``, else written to ``config.toml``."""
    key = _key(p)
    if "value" not in p:
        raise bad("value", "present")
    value = p["value"]
    live = await gw.live_checked(session_id(p)) if session_id(p) else None
    scope = p.get("scope")
    if scope is not None and scope not in ("session", "global"):
        raise GatewayError(
            4002, f"invalid scope: {scope}", {"key": "scope", "allowed": ["session", "global"]}
        )
    to_global = live is None or scope == "global"
    if key in ("full", "mtime"):
        raise GatewayError(4002, f"{key} is read-only", {"key": key, "allowed": []})
    result: dict[str, Any] = {"key": key, "value": value}
    if key == "model":
        if not isinstance(value, str) or not value.strip():
            raise GatewayError(4002, "invalid model", {"key": "model", "allowed": []})
        if live is None:
            return await _switch_default(gw, value)
        if scope == "global" and "--global" not in value:
            value = f"{value} --global"
        result = await _switch(gw, live, value)
    elif key == "provider":
        if not isinstance(value, str) or not gw.kernel.hub.has(value):
            raise GatewayError(
                4002, f"unknown provider: {value}", {"key": "provider", "allowed": gw.kernel.hub.names()}
            )
        models = await gw.kernel.hub.offline_models(value)
        if not models or live is None:
            raise GatewayError(
                4002, f"provider {value} has no default model", {"key": "provider", "allowed": []}
            )
        result = await _switch(gw, live, f"{value}:{models[0].id}")
    elif key in ("approval_mode", "yolo"):
        if key == "yolo":
            if value not in ("1", "0", 1, 0, True, False):
                raise GatewayError(4002, "invalid yolo value", {"key": key, "allowed": ["1", "0"]})
            profile = "off" if value in ("1", 1, True) else gw.settings.approval_profile
        else:
            profile = "default" if value == "manual" else value
            if profile not in PROFILES:
                raise GatewayError(
                    4002, f"invalid approval_mode: {value}", {"key": key, "allowed": list(PROFILES)}
                )
        if live is not None:
            await live.session.set_profile(str(profile))
        if to_global:
            await _write(gw, "tui.approval_profile", profile)
    elif key == "busy":
        if value not in BUSY:
            raise GatewayError(4002, f"invalid busy value: {value}", {"key": key, "allowed": list(BUSY)})
        if live is not None:
            live.busy_policy = value
            live.session.extra["tui.busy_policy"] = value
        if to_global:
            await _write(gw, "tui.busy_policy", value)
    elif key == "reasoning":
        if value in ("show", "hide"):
            if live is not None:
                live.reasoning_display = value
            if to_global:
                await _write(gw, "display.reasoning", value)
        elif value in EFFORTS:
            if live is not None:
                await live.session.set_reasoning_effort(value)
            if to_global:
                await _write(gw, "reasoning_effort", value)
        else:
            raise GatewayError(
                4002, f"invalid reasoning value: {value}", {"key": key, "allowed": [*EFFORTS, "show", "hide"]}
            )
    elif key == "cwd":
        if live is None:
            raise GatewayError(4001, "session not found", {"session_id": session_id(p), "resumable": False})
        if not isinstance(value, str) or not Path(value).expanduser().is_dir():
            raise GatewayError(4017, f"invalid cwd: {value}")
        if live.session.busy:
            raise GatewayError(4009, "session busy", {"reason": "busy"})
        await live.session.set_cwd(Path(value).expanduser().absolute())
        cwd = live.session.info().cwd
        result = {"key": "cwd", "value": cwd, "cwd": cwd, "branch": git_branch(cwd)}
    elif key == "verbose":
        if value not in (*VERBOSE, "cycle"):
            raise GatewayError(
                4002, f"invalid verbose value: {value}", {"key": key, "allowed": [*VERBOSE, "cycle"]}
            )
        if value == "cycle":
            current = live.stream.verbose if live is not None else gw.default_verbose
            value = VERBOSE[(VERBOSE.index(current) + 1) % len(VERBOSE)] if current in VERBOSE else "all"
        result["value"] = value
        if live is not None:
            live.stream.verbose = value
            live.session.extra["tui.verbose"] = value
        if to_global:
            await _write(gw, "display.verbose", value)
            gw.default_verbose = value
    else:
        if not isinstance(value, str) or len(value) > 64:
            raise GatewayError(
                4002, f"invalid {key} value", {"key": key, "allowed": ["a string of at most 64 characters"]}
            )
        if live is not None and not to_global:
            live.session.extra[f"tui.display.{key}"] = value
        else:
            await _write(gw, f"display.{key}", value)
    if live is not None:
        live.stream.emit_info(force=True)
    return result


async def _write(gw: Gateway, key: str, value: Any) -> None:
    store = _store(gw)
    try:
        await gw.run_blocking(store.set, key, value)
    except Exception as exc:
        raise GatewayError(5001, f"config write failed: {type(exc).__name__}") from exc


async def model_options(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``model.options``: the core's catalog with its probe policy."""
    sid = session_id(p)
    live = await gw.live_checked(sid) if sid else None
    refresh = truthy(p.get("refresh"))
    try:
        catalog = await gw.kernel.model_catalog(refresh=refresh, session=live.session if live else None)
    except Exception as exc:
        raise GatewayError(5033, f"model.options failed: {type(exc).__name__}") from exc
    providers = []
    for row in catalog.get("providers", []):
        item = {
            "slug": row["slug"],
            "name": row["name"],
            "is_current": row["is_current"],
            "authenticated": row["authenticated"],
            "models": row["models"],
            "total_models": row["total_models"],
        }
        probe = row.get("probe") or {}
        if probe.get("status") == "failed":
            item["warning"] = str(probe.get("error") or "probe failed")
        providers.append(item)
    return {"model": catalog.get("model"), "provider": catalog.get("provider"), "providers": providers}


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""
    gw.fast["config.get"] = lambda conn, p: config_get(gw, conn, p)
    gw.slow.update(
        {
            "config.set": lambda conn, p: config_set(gw, conn, p),
            "model.options": lambda conn, p: model_options(gw, conn, p),
        }
    )
