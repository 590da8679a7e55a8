"""The setters behind ``config.set`` (docs/reference/tui-gateway.md#configuration-and-models), one small
function per key.

Each setter gets a :class:`Change` and returns the method's result. ``config.set`` picks the
setter from :data:`SETTERS` (display keys fall through to :func:`set_display`) and afterwards
re-sends ``session.info``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from hermes_core import InvalidValue, ModelAmbiguous, ModelNeedsKey, ModelNotFound
from hermes_tui_gateway.gitinfo import git_branch
from hermes_tui_gateway.params import GatewayError, workspace
from hermes_tui_gateway.stream import VERBOSE
from hermes_tui_gateway.wire_results_ops import ConfigValue

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Gateway, Live

PROFILES = ("default", "accept_edits", "ask_everything", "off")
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
BUSY = ("queue", "steer", "interrupt")


@dataclass(slots=True)
class Change:
    """One ``config.set`` request: which key, the value, and where it applies."""

    gw: Gateway
    live: Live | None
    key: str
    value: Any
    scope: str | None
    session_id: str | None

    @property
    def to_global(self) -> bool:
        """Whether the value is also written to ``config.toml`` (no session, or scope global)."""
        return self.live is None or self.scope == "global"

    def invalid(self, message: str, allowed: list[Any]) -> GatewayError:
        return GatewayError(4002, message, {"key": self.key, "allowed": allowed})

    def echo(self) -> ConfigValue:
        return {"key": self.key, "value": self.value}


Setter = Callable[[Change], Awaitable[ConfigValue]]


def _store(gw: Gateway) -> Any:
    store = gw.kernel.store
    if store is None:
        raise GatewayError(5001, "config write failed: no settings store")
    return store


async def write(gw: Gateway, key: str, value: Any) -> None:
    """Write one setting to ``config.toml`` (on the worker pool); failures are ``5001``."""
    store = _store(gw)
    try:
        await gw.run_blocking(store.set, key, value)
    except Exception as exc:
        raise GatewayError(5001, f"config write failed: {type(exc).__name__}") from exc


def _one_ref(raw: str) -> str:
    """Return the one model reference in ``raw``; ``MODEL --provider P`` means ``P:MODEL``.

    Other ``--`` flags are scope words (``--global``, ``--once``; ``--session``, the Ink TUI's
    spelling of the default) and are read by the caller.
    """
    words = raw.split()
    provider: str | None = None
    refs: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--provider" and i + 1 < len(words):
            provider = words[i + 1]
            i += 2
            continue
        if word.startswith("--provider="):
            provider = word.partition("=")[2]
        elif not word.startswith("--"):
            refs.append(word)
        i += 1
    if len(refs) != 1:
        raise GatewayError(4002, "give one model reference", {"key": "model", "allowed": []})
    ref = refs[0]
    if provider and not ref.startswith(f"{provider}:"):
        ref = f"{provider}:{ref}"
    return ref


def _model_result(done: Any, scope: str) -> ConfigValue:
    return {
        "key": "model",
        "value": done.ref,
        "model": done.model,
        "provider": done.provider,
        "scope": scope,
        "warning": None,
    }


def _model_error(exc: ModelAmbiguous | ModelNotFound) -> GatewayError:
    data: dict[str, Any] = {"key": "model", "candidates": list(exc.candidates)}
    if isinstance(exc, ModelNeedsKey):
        data["keys"] = dict(exc.keys)
    return GatewayError(4002, str(exc), data)


async def switch(live: Live, raw: str, *, global_scope: bool = False) -> ConfigValue:
    """Switch a session's model; ``raw`` is a reference with ``--global`` or ``--once`` flags."""
    words = raw.split()
    scope: Literal["session", "global", "once"] = "session"
    if global_scope or "--global" in words:
        scope = "global"
    elif "--once" in words:
        scope = "once"
    ref = _one_ref(raw)
    if live.session.busy:
        raise GatewayError(4009, "session busy", {"reason": "busy"})
    try:
        done = await live.session.switch_model(ref, scope=scope)
    except (ModelAmbiguous, ModelNotFound) as exc:
        raise _model_error(exc) from exc
    except InvalidValue as exc:
        raise GatewayError(4002, str(exc), {"key": "model", "allowed": []}) from exc
    return _model_result(done, scope)


async def _switch_default(gw: Gateway, raw: str) -> ConfigValue:
    """``config.set model`` without a session: the default model, written to ``config.toml``."""
    ref = _one_ref(raw)
    try:
        done = await gw.kernel.models.switch(ref)
    except (ModelAmbiguous, ModelNotFound) as exc:
        raise _model_error(exc) from exc
    except InvalidValue as exc:
        raise GatewayError(5001, f"could not write config.toml: {exc}") from exc
    return _model_result(done, "global")


async def set_model(c: Change) -> ConfigValue:
    if not isinstance(c.value, str) or not c.value.strip():
        raise GatewayError(4002, "invalid model", {"key": "model", "allowed": []})
    if c.live is None:
        return await _switch_default(c.gw, c.value)
    return await switch(c.live, c.value, global_scope=c.scope == "global")


async def set_provider(c: Change) -> ConfigValue:
    hub = c.gw.kernel.providers
    if not isinstance(c.value, str) or not hub.has(c.value):
        raise c.invalid(f"unknown provider: {c.value}", hub.names())
    models = await hub.offline_models(c.value)
    if not models or c.live is None:
        raise c.invalid(f"provider {c.value} has no default model", [])
    return await switch(c.live, f"{c.value}:{models[0].id}")


async def _apply_profile(c: Change, profile: str) -> ConfigValue:
    if c.live is not None:
        await c.live.session.set_profile(profile)
    if c.to_global:
        await write(c.gw, "tui.approval_profile", profile)
    return c.echo()


async def set_yolo(c: Change) -> ConfigValue:
    if c.value not in ("1", "0", 1, 0, True, False):
        raise c.invalid("invalid yolo value", ["1", "0"])
    return await _apply_profile(c, "off" if c.value in ("1", 1, True) else c.gw.settings.approval_profile)


async def set_approval_mode(c: Change) -> ConfigValue:
    profile = "default" if c.value == "manual" else c.value
    if profile not in PROFILES:
        raise c.invalid(f"invalid approval_mode: {c.value}", list(PROFILES))
    return await _apply_profile(c, str(profile))


async def set_busy(c: Change) -> ConfigValue:
    if c.value not in BUSY:
        raise c.invalid(f"invalid busy value: {c.value}", list(BUSY))
    if c.live is not None:
        c.live.busy_policy = c.value
        c.live.session.extra["tui.busy_policy"] = c.value
    if c.to_global:
        await write(c.gw, "tui.busy_policy", c.value)
    return c.echo()


async def set_reasoning(c: Change) -> ConfigValue:
    if c.value in ("show", "hide"):
        if c.live is not None:
            c.live.reasoning_display = c.value
        if c.to_global:
            await write(c.gw, "display.reasoning", c.value)
    elif c.value in EFFORTS:
        if c.live is not None:
            await c.live.session.set_reasoning_effort(c.value)
        if c.to_global:
            await write(c.gw, "reasoning_effort", c.value)
    else:
        raise c.invalid(f"invalid reasoning value: {c.value}", [*EFFORTS, "show", "hide"])
    return c.echo()


async def set_cwd(c: Change) -> ConfigValue:
    if c.live is None:
        raise GatewayError(4001, "session not found", {"session_id": c.session_id, "resumable": False})
    if not isinstance(c.value, str):
        raise GatewayError(4017, f"invalid cwd: {c.value}")
    folder = workspace(c.value or ".", c.value)
    if c.live.session.busy:
        raise GatewayError(4009, "session busy", {"reason": "busy"})
    await c.live.session.set_cwd(folder)
    cwd = c.live.session.info().cwd
    return {"key": "cwd", "value": cwd, "cwd": cwd, "branch": git_branch(cwd)}


async def set_verbose(c: Change) -> ConfigValue:
    value = c.value
    if value not in (*VERBOSE, "cycle"):
        raise c.invalid(f"invalid verbose value: {value}", [*VERBOSE, "cycle"])
    if value == "cycle":
        current = c.live.stream.verbose if c.live is not None else c.gw.default_verbose
        value = VERBOSE[(VERBOSE.index(current) + 1) % len(VERBOSE)] if current in VERBOSE else "all"
    if c.live is not None:
        c.live.stream.verbose = value
        c.live.session.extra["tui.verbose"] = value
    if c.to_global:
        await write(c.gw, "display.verbose", value)
        c.gw.default_verbose = value
    return {"key": c.key, "value": value}


async def set_display(c: Change) -> ConfigValue:
    """A display key: any string of at most 64 characters, kept by the session or written."""
    if not isinstance(c.value, str) or len(c.value) > 64 or "\x00" in c.value:
        raise c.invalid(f"invalid {c.key} value", ["a string of at most 64 characters, without NUL"])
    if c.live is not None and not c.to_global:
        c.live.session.extra[f"tui.display.{c.key}"] = c.value
    else:
        await write(c.gw, f"display.{c.key}", c.value)
    return c.echo()


#: ``config.set`` keys with a setter of their own; other (display) keys use :func:`set_display`.
SETTERS: dict[str, Setter] = {
    "model": set_model,
    "provider": set_provider,
    "approval_mode": set_approval_mode,
    "yolo": set_yolo,
    "busy": set_busy,
    "reasoning": set_reasoning,
    "cwd": set_cwd,
    "verbose": set_verbose,
}
