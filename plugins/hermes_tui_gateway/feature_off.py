"""Methods of upstream Hermes's Ink TUI for features Hermes does not have, answered as "off"
(docs/protocols/tui-gateway.md#using-the-ink-tui).

The Ink TUI (from the ``hermes-agent`` 0.19.0 wheel) calls these for pets, billing and
subscriptions, the learning journey, voice, browser control, skills, file checkpoints and
provider-key management. Upstream's own gateway answers each of them with a definite "not
available" result when the feature is off or unconfigured (``{"enabled": false}``, a logged-out
billing state, an empty list…), and the TUI then shows nothing. This table gives the same answers,
so the TUI stays quiet instead of printing ``unknown method`` errors. Methods outside this table
and the gateway's own are still ``-32601``.

Each entry is a function of the request params that returns the result or raises the error
upstream would answer with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hermes_tui_gateway.params import GatewayError

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Gateway

Answer = Callable[[Mapping[str, Any]], dict[str, Any]]

NOT_SIGNED_IN = "Not signed in to a billing account: Hermes has no billing."
RECORD_KEY = "ctrl+b"


def _const(value: dict[str, Any]) -> Answer:
    return lambda _p: dict(value)


def _billing_refused(extra: Mapping[str, Any] | None = None) -> Answer:
    """The typed error envelope a billing call gets when nobody is signed in (a result, not an error)."""

    def answer(p: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ok": False,
            "error": "invalid_token",
            "message": NOT_SIGNED_IN,
            "portal_url": None,
            "retry_after": None,
            "payload": {},
            "actor": None,
            "code": None,
            "recovery": None,
        }
        out.update(extra or {})
        if "idempotency_key" in p:
            out["idempotency_key"] = p["idempotency_key"]
        return out

    return answer


def _pet_select(p: Mapping[str, Any]) -> dict[str, Any]:
    slug = str(p.get("slug") or "").strip()
    if not slug:
        raise GatewayError(4004, "missing slug")
    raise GatewayError(5031, f"could not adopt '{slug}': pets are not part of Hermes")


def _voice_toggle(p: Mapping[str, Any]) -> dict[str, Any]:
    action = p.get("action", "status")
    off = {"enabled": False, "record_key": RECORD_KEY, "tts": False}
    if action == "status":
        missing = {"available": False, "audio_available": False, "stt_available": False}
        return {**off, **missing, "details": "Voice input is not part of Hermes."}
    if action in ("on", "off"):
        return off
    if action == "tts":
        raise GatewayError(4014, "enable voice mode first: /voice on")
    raise GatewayError(4013, f"unknown voice action: {action}")


def _voice_record(p: Mapping[str, Any]) -> dict[str, Any]:
    action = p.get("action", "start")
    if action == "start":
        raise GatewayError(4015, "voice mode is off")
    if action == "stop":
        return {"status": "stopped"}
    raise GatewayError(4019, f"unknown voice action: {action}")


def _browser(p: Mapping[str, Any]) -> dict[str, Any]:
    action = p.get("action", "status")
    if action in ("status", "disconnect"):
        return {"connected": False, "url": ""} if action == "status" else {"connected": False}
    if action == "connect":
        raise GatewayError(5029, "browser control is not part of Hermes")
    raise GatewayError(4015, f"unknown action: {action}")


def _skills(p: Mapping[str, Any]) -> dict[str, Any]:
    action = p.get("action", "list")
    if action == "list":
        return {"skills": {}}
    if action == "search":
        return {"results": []}
    if action == "browse":
        return {"items": [], "page": 1, "total_pages": 1, "total": 0}
    if action == "inspect":
        return {"info": {}}
    if action == "install":
        raise GatewayError(5024, "skills are not part of Hermes")
    raise GatewayError(4017, f"unknown skills action: {action}")


def _rollback_hash(p: Mapping[str, Any]) -> None:
    if not p.get("hash"):
        raise GatewayError(4014, "hash required")


def _rollback_diff(p: Mapping[str, Any]) -> dict[str, Any]:
    _rollback_hash(p)
    return {"stat": "", "diff": ""}


def _rollback_restore(p: Mapping[str, Any]) -> dict[str, Any]:
    _rollback_hash(p)
    return {"success": False, "error": "No checkpoints exist for this directory"}


def _learning(name: str) -> Answer:
    def answer(_p: Mapping[str, Any]) -> dict[str, Any]:
        raise GatewayError(5000, f"{name} failed: the learning journey is not part of Hermes")

    return answer


def _needs_slug(what: str) -> Answer:
    def answer(p: Mapping[str, Any]) -> dict[str, Any]:
        if not str(p.get("slug") or "").strip():
            raise GatewayError(4001, f"slug is required ({what})")
        raise GatewayError(4003, "provider keys are managed in .env or config.toml, not from the TUI")

    return answer


#: Method name -> the "off" answer. Every name here is one the Ink TUI 0.19.0 calls.
ANSWERS: dict[str, Answer] = {
    # pets
    "pet.info": _const({"enabled": False}),
    "pet.info.meta": _const({"enabled": False}),
    "pet.cells": _const({"enabled": False}),
    "pet.gallery": _const({"enabled": False, "active": "", "pets": []}),
    "pet.select": _pet_select,
    # billing and subscriptions: a logged-out account
    "billing.state": _const({"ok": True, "logged_in": False, "error": NOT_SIGNED_IN}),
    "usage.bars": _const({"ok": True, "available": False}),
    "subscription.state": _const({"ok": True, "logged_in": False, "error": NOT_SIGNED_IN}),
    "subscription.preview": _billing_refused(),
    "subscription.change": _billing_refused(),
    "subscription.resume": _billing_refused(),
    "subscription.upgrade": _billing_refused(),
    "billing.charge": _billing_refused(),
    "billing.charge_status": _billing_refused(),
    "billing.auto_reload": _billing_refused(),
    "billing.step_up": _billing_refused({"granted": False}),
    # the learning journey
    "learning.frames": _learning("learning.frames"),
    "learning.detail": _learning("learning.detail"),
    "learning.delete": _learning("learning.delete"),
    "learning.edit": _learning("learning.edit"),
    # voice, browser
    "voice.toggle": _voice_toggle,
    "voice.record": _voice_record,
    "browser.manage": _browser,
    # skills (none here)
    "skills.manage": _skills,
    "skills.reload": _const(
        {
            "output": "Reloading skills...\nNo new skills detected.\n0 skill(s) available",
            "result": {"added": [], "removed": [], "total": 0},
        }
    ),
    # file checkpoints (none here)
    "rollback.list": _const({"enabled": False, "checkpoints": []}),
    "rollback.diff": _rollback_diff,
    "rollback.restore": _rollback_restore,
    # provider keys from the model picker
    "model.save_key": _needs_slug("model.save_key"),
    "model.disconnect": _needs_slug("model.disconnect"),
}


def register(gw: Gateway) -> None:
    """Answer the table's methods on the fast path (none of them does any work)."""
    for name, answer in ANSWERS.items():
        gw.fast[name] = _bind(answer)


def _bind(answer: Answer) -> Callable[[Any, dict[str, Any]], dict[str, Any]]:
    return lambda _conn, p: answer(p)
