"""The params and results of the "feature off" methods (:mod:`hermes_tui_gateway.feature_off`).

Upstream Hermes's Ink TUI calls these for features Hermes does not have; upstream's gateway
answers each with a definite "off" result when the feature is off, and those answers are what
the result types below describe. The handlers parse their params with these models and build
their answers with these types, so ``hermes schema export`` types every method the gateway
answers. A param is listed when upstream's gateway reads it (the Ink TUI sends it); the off
answers read only the ones their checks need (``slug``, ``hash``, ``action``).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, NotRequired

from pydantic import Field, RootModel
from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on 3.12+

from hermes_tui_gateway.wire_params import ParamsModel, SessionParams

#: a list the off answer always leaves empty
Empty = Annotated[list[Any], Field(max_length=0)]
#: an object the off answer always leaves empty
EmptyObject = Annotated[dict[str, Any], Field(max_length=0)]


# -- params ----------------------------------------------------------------------------------
class PetCellsParams(ParamsModel):
    """``pet.cells``: a pet state's half-block frames (off: ``{enabled: false}``)."""

    state: str | None = None
    cols: int | None = None
    graphics: bool | None = None


class PetGalleryParams(ParamsModel):
    """``pet.gallery``: the adoptable pets (off: none)."""

    localOnly: bool | None = None  # upstream's wire name


class PetSelectParams(ParamsModel):
    """``pet.select``: adopt a pet (4004 without ``slug``; 5031 otherwise: no pets here)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("slug",)

    slug: str = ""


class SubscriptionParams(ParamsModel):
    """``subscription.preview``, ``.change`` and ``.upgrade`` (off: the not-signed-in refusal)."""

    subscription_type_id: str | None = None
    cancel: bool | None = None
    idempotency_key: str | None = None


class ChargeParams(ParamsModel):
    """``billing.charge`` (off: the not-signed-in refusal, echoing ``idempotency_key``)."""

    amount_usd: str | float | None = None
    idempotency_key: str | None = None


class ChargeStatusParams(ParamsModel):
    """``billing.charge_status`` (off: the not-signed-in refusal)."""

    charge_id: str | None = None


class AutoReloadParams(ParamsModel):
    """``billing.auto_reload`` (off: the not-signed-in refusal)."""

    enabled: bool | None = None
    threshold: float | None = None
    top_up_amount: float | None = None


class LearningFramesParams(ParamsModel):
    """``learning.frames`` (off: always 5000)."""

    cols: int | None = None
    rows: int | None = None
    frames: int | None = None


class LearningItemParams(ParamsModel):
    """``learning.detail``, ``.delete`` and ``.edit`` (off: always 5000)."""

    id: str | None = None
    content: str | None = None


class VoiceToggleParams(ParamsModel):
    """``voice.toggle``: ``status`` (default), ``on``, ``off`` or ``tts`` (4014: voice is off;
    4013 for any other action)."""

    action: str = "status"


class VoiceRecordParams(SessionParams):
    """``voice.record``: ``start`` (default; 4015: voice is off) or ``stop`` (4019 otherwise)."""

    action: str = "start"


class BrowserParams(SessionParams):
    """``browser.manage``: ``status`` (default), ``disconnect`` or ``connect`` (5029: no browser
    control here; 4015 for any other action)."""

    action: str = "status"
    url: str | None = None


class SkillsParams(ParamsModel):
    """``skills.manage``: ``list`` (default), ``search``, ``browse``, ``inspect`` or ``install``
    (5024: no skills here; 4017 for any other action)."""

    action: str = "list"
    query: str | None = None
    page: int | None = None
    page_size: int | None = None


class RollbackDiffParams(SessionParams):
    """``rollback.diff``: one checkpoint (4014 without ``hash``)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("hash",)

    hash: str = ""


class RollbackRestoreParams(RollbackDiffParams):
    """``rollback.restore``: one checkpoint, optionally one file of it (4014 without ``hash``)."""

    file_path: str | None = None


class ProviderKeyParams(SessionParams):
    """``model.save_key`` and ``model.disconnect`` (4001 without ``slug``; 4003 otherwise:
    provider keys live in ``.env`` or ``config.toml``)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("slug",)

    slug: str = ""
    api_key: str | None = None


# -- results ---------------------------------------------------------------------------------
class PetOff(TypedDict):
    """``pet.info``, ``pet.info.meta``, ``pet.cells``: no pet is active."""

    enabled: Literal[False]


class PetGalleryOff(TypedDict):
    """``pet.gallery``: no pet enabled, none active, none to adopt."""

    enabled: Literal[False]
    active: str
    pets: Empty


class SignedOut(TypedDict):
    """``billing.state``, ``subscription.state``: no billing account is signed in."""

    ok: Literal[True]
    logged_in: Literal[False]
    error: str


class UsageBarsOff(TypedDict):
    """``usage.bars``: no plan usage to show."""

    ok: Literal[True]
    available: Literal[False]


class BillingRefused(TypedDict):
    """A billing or subscription change refused because nobody is signed in: upstream's typed
    error envelope, sent as a result (``idempotency_key`` echoed when the request had one)."""

    ok: Literal[False]
    error: Literal["invalid_token"]
    message: str
    portal_url: str | None
    retry_after: float | None
    payload: EmptyObject
    actor: str | None
    code: str | None
    recovery: str | None
    idempotency_key: NotRequired[str]


class StepUpRefused(BillingRefused):
    """``billing.step_up``: the refusal, and no step-up granted."""

    granted: Literal[False]


class VoiceOff(TypedDict):
    """``voice.toggle``: voice is off; ``status`` also says why (nothing to record or speak with)."""

    enabled: Literal[False]
    record_key: str
    tts: Literal[False]
    available: NotRequired[Literal[False]]
    audio_available: NotRequired[Literal[False]]
    stt_available: NotRequired[Literal[False]]
    details: NotRequired[str]


class VoiceStopped(TypedDict):
    """``voice.record`` ``stop``: nothing was recording."""

    status: Literal["stopped"]


class BrowserOff(TypedDict):
    """``browser.manage`` ``status`` (with an empty ``url``) and ``disconnect``: not connected."""

    connected: Literal[False]
    url: NotRequired[str]


class SkillsList(TypedDict):
    """``skills.manage`` ``list``: no skills."""

    skills: EmptyObject


class SkillsSearch(TypedDict):
    """``skills.manage`` ``search``: no results."""

    results: Empty


class SkillsBrowse(TypedDict):
    """``skills.manage`` ``browse``: one empty page."""

    items: Empty
    page: int
    total_pages: int
    total: int


class SkillsInspect(TypedDict):
    """``skills.manage`` ``inspect``: nothing to show."""

    info: EmptyObject


class SkillsAnswer(RootModel[SkillsList | SkillsSearch | SkillsBrowse | SkillsInspect]):
    """``skills.manage``: the answer of its action (``install`` is always 5024)."""


class SkillsReloadCounts(TypedDict):
    """What a skills reload found."""

    added: Empty
    removed: Empty
    total: int


class SkillsReloaded(TypedDict):
    """``skills.reload``: the reload's text and counts (none found)."""

    output: str
    result: SkillsReloadCounts


class RollbackListOff(TypedDict):
    """``rollback.list``: no file checkpoints."""

    enabled: Literal[False]
    checkpoints: Empty


class RollbackDiffOff(TypedDict):
    """``rollback.diff``: an empty diff."""

    stat: str
    diff: str


class RollbackRestoreOff(TypedDict):
    """``rollback.restore``: nothing restored, and why."""

    success: Literal[False]
    error: str
