"""Methods of upstream Hermes's Ink TUI for features Hermes does not have, answered as "off"
(docs/protocols/tui-gateway.md#using-the-ink-tui).

The Ink TUI (from the ``hermes-agent`` 0.19.0 wheel) calls these for pets, billing and
subscriptions, the learning journey, voice, browser control, skills, file checkpoints and
provider-key management. Upstream's own gateway answers each of them with a definite "not
available" result when the feature is off or unconfigured (``{"enabled": false}``, a logged-out
billing state, an empty list…), and the TUI then shows nothing. This table gives the same answers,
so the TUI stays quiet instead of printing ``unknown method`` errors. Methods outside this table
and the gateway's own are still ``-32601``.

Each entry parses the request with its params model and builds its answer with its result type
(both in :mod:`hermes_tui_gateway.wire_off`, exported like every typed method), or raises the
error upstream would answer with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from hermes_tui_gateway import wire_off as w
from hermes_tui_gateway.params import GatewayError
from hermes_tui_gateway.wire_params import NoParams, ParamsModel, SessionParams, parse
from hermes_tui_gateway.wire_results_ops import NeverAnswered

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Gateway

NOT_SIGNED_IN = "Not signed in to a billing account: Hermes has no billing."
RECORD_KEY = "ctrl+b"


class Off(NamedTuple):
    """One method's params model, result type and answer (a function of the parsed params)."""

    params: type[ParamsModel]
    result: Any
    answer: Callable[[Any], Any]

    def parsed(self, params: Any) -> Any:
        """Answer a request's raw params (a bad param is the -32602 of :func:`parse`)."""
        return self.answer(parse(self.params, params))


def _pet_off(_p: ParamsModel) -> w.PetOff:
    return w.PetOff(enabled=False)


def _signed_out(_p: ParamsModel) -> w.SignedOut:
    return w.SignedOut(ok=True, logged_in=False, error=NOT_SIGNED_IN)


def _refusal(key: str | None) -> w.BillingRefused:
    out = w.BillingRefused(
        ok=False,
        error="invalid_token",
        message=NOT_SIGNED_IN,
        portal_url=None,
        retry_after=None,
        payload={},
        actor=None,
        code=None,
        recovery=None,
    )
    if key is not None:
        out["idempotency_key"] = key
    return out


def _billing_refused(p: ParamsModel) -> w.BillingRefused:
    """The typed error envelope a billing call gets when nobody is signed in (a result, not an error)."""
    return _refusal(getattr(p, "idempotency_key", None))


def _step_up_refused(_p: ParamsModel) -> w.StepUpRefused:
    return w.StepUpRefused(**_refusal(None), granted=False)


def _pet_select(p: w.PetSelectParams) -> NeverAnswered:
    slug = p.slug.strip()
    if not slug:
        raise GatewayError(4004, "missing slug")
    raise GatewayError(5031, f"could not adopt '{slug}': pets are not part of Hermes")


def _voice_toggle(p: w.VoiceToggleParams) -> w.VoiceOff:
    if p.action == "status":
        return w.VoiceOff(
            enabled=False,
            record_key=RECORD_KEY,
            tts=False,
            available=False,
            audio_available=False,
            stt_available=False,
            details="Voice input is not part of Hermes.",
        )
    if p.action in ("on", "off"):
        return w.VoiceOff(enabled=False, record_key=RECORD_KEY, tts=False)
    if p.action == "tts":
        raise GatewayError(4014, "enable voice mode first: /voice on")
    raise GatewayError(4013, f"unknown voice action: {p.action}")


def _voice_record(p: w.VoiceRecordParams) -> w.VoiceStopped:
    if p.action == "start":
        raise GatewayError(4015, "voice mode is off")
    if p.action == "stop":
        return w.VoiceStopped(status="stopped")
    raise GatewayError(4019, f"unknown voice action: {p.action}")


def _browser(p: w.BrowserParams) -> w.BrowserOff:
    if p.action == "status":
        return w.BrowserOff(connected=False, url="")
    if p.action == "disconnect":
        return w.BrowserOff(connected=False)
    if p.action == "connect":
        raise GatewayError(5029, "browser control is not part of Hermes")
    raise GatewayError(4015, f"unknown action: {p.action}")


def _skills(p: w.SkillsParams) -> w.SkillsList | w.SkillsSearch | w.SkillsBrowse | w.SkillsInspect:
    if p.action == "list":
        return w.SkillsList(skills={})
    if p.action == "search":
        return w.SkillsSearch(results=[])
    if p.action == "browse":
        return w.SkillsBrowse(items=[], page=1, total_pages=1, total=0)
    if p.action == "inspect":
        return w.SkillsInspect(info={})
    if p.action == "install":
        raise GatewayError(5024, "skills are not part of Hermes")
    raise GatewayError(4017, f"unknown skills action: {p.action}")


def _skills_reload(_p: ParamsModel) -> w.SkillsReloaded:
    return w.SkillsReloaded(
        output="Reloading skills...\nNo new skills detected.\n0 skill(s) available",
        result=w.SkillsReloadCounts(added=[], removed=[], total=0),
    )


def _rollback_hash(p: w.RollbackDiffParams) -> None:
    if not p.hash:
        raise GatewayError(4014, "hash required")


def _rollback_diff(p: w.RollbackDiffParams) -> w.RollbackDiffOff:
    _rollback_hash(p)
    return w.RollbackDiffOff(stat="", diff="")


def _rollback_restore(p: w.RollbackRestoreParams) -> w.RollbackRestoreOff:
    _rollback_hash(p)
    return w.RollbackRestoreOff(success=False, error="No checkpoints exist for this directory")


def _learning(name: str) -> Callable[[ParamsModel], NeverAnswered]:
    def answer(_p: ParamsModel) -> NeverAnswered:
        raise GatewayError(5000, f"{name} failed: the learning journey is not part of Hermes")

    return answer


def _needs_slug(what: str) -> Callable[[w.ProviderKeyParams], NeverAnswered]:
    def answer(p: w.ProviderKeyParams) -> NeverAnswered:
        if not p.slug.strip():
            raise GatewayError(4001, f"slug is required ({what})")
        raise GatewayError(4003, "provider keys are managed in .env or config.toml, not from the TUI")

    return answer


_REFUSED = Off(w.SubscriptionParams, w.BillingRefused, _billing_refused)

#: Method name -> the "off" answer. Every name here is one the Ink TUI 0.19.0 calls.
OFF: dict[str, Off] = {
    # pets
    "pet.info": Off(NoParams, w.PetOff, _pet_off),
    "pet.info.meta": Off(NoParams, w.PetOff, _pet_off),
    "pet.cells": Off(w.PetCellsParams, w.PetOff, _pet_off),
    "pet.gallery": Off(
        w.PetGalleryParams, w.PetGalleryOff, lambda _p: w.PetGalleryOff(enabled=False, active="", pets=[])
    ),
    "pet.select": Off(w.PetSelectParams, NeverAnswered, _pet_select),
    # billing and subscriptions: a logged-out account
    "billing.state": Off(NoParams, w.SignedOut, _signed_out),
    "usage.bars": Off(NoParams, w.UsageBarsOff, lambda _p: w.UsageBarsOff(ok=True, available=False)),
    "subscription.state": Off(NoParams, w.SignedOut, _signed_out),
    "subscription.preview": _REFUSED,
    "subscription.change": _REFUSED,
    "subscription.resume": Off(NoParams, w.BillingRefused, _billing_refused),
    "subscription.upgrade": _REFUSED,
    "billing.charge": Off(w.ChargeParams, w.BillingRefused, _billing_refused),
    "billing.charge_status": Off(w.ChargeStatusParams, w.BillingRefused, _billing_refused),
    "billing.auto_reload": Off(w.AutoReloadParams, w.BillingRefused, _billing_refused),
    "billing.step_up": Off(SessionParams, w.StepUpRefused, _step_up_refused),
    # the learning journey
    "learning.frames": Off(w.LearningFramesParams, NeverAnswered, _learning("learning.frames")),
    "learning.detail": Off(w.LearningItemParams, NeverAnswered, _learning("learning.detail")),
    "learning.delete": Off(w.LearningItemParams, NeverAnswered, _learning("learning.delete")),
    "learning.edit": Off(w.LearningItemParams, NeverAnswered, _learning("learning.edit")),
    # voice, browser
    "voice.toggle": Off(w.VoiceToggleParams, w.VoiceOff, _voice_toggle),
    "voice.record": Off(w.VoiceRecordParams, w.VoiceStopped, _voice_record),
    "browser.manage": Off(w.BrowserParams, w.BrowserOff, _browser),
    # skills (none here)
    "skills.manage": Off(w.SkillsParams, w.SkillsAnswer, _skills),
    "skills.reload": Off(NoParams, w.SkillsReloaded, _skills_reload),
    # file checkpoints (none here)
    "rollback.list": Off(
        SessionParams, w.RollbackListOff, lambda _p: w.RollbackListOff(enabled=False, checkpoints=[])
    ),
    "rollback.diff": Off(w.RollbackDiffParams, w.RollbackDiffOff, _rollback_diff),
    "rollback.restore": Off(w.RollbackRestoreParams, w.RollbackRestoreOff, _rollback_restore),
    # provider keys from the model picker
    "model.save_key": Off(w.ProviderKeyParams, NeverAnswered, _needs_slug("model.save_key")),
    "model.disconnect": Off(w.ProviderKeyParams, NeverAnswered, _needs_slug("model.disconnect")),
}

#: Method name -> its answer, a function of the raw request params.
ANSWERS: dict[str, Callable[[Any], Any]] = {name: off.parsed for name, off in OFF.items()}


def register(gw: Gateway) -> None:
    """Answer the table's methods on the fast path (none of them does any work).

    This module loads on the first call of one of them (``method_index``), possibly after the
    module of a real method of the same name: a name already registered is left to it.
    """
    for name, answer in ANSWERS.items():
        if name not in gw.fast and name not in gw.ordered and name not in gw.slow:
            gw.fast[name] = _bind(answer)


def _bind(answer: Callable[[Any], Any]) -> Callable[[Any, dict[str, Any]], Any]:
    return lambda _conn, p: answer(p)
