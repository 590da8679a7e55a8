"""Whether a turn's images go to the model (docs/reference/core.md#images): decided on what is known, never
guessed.

A model known to see images gets them; a model known not to (a catalog entry with
``vision: false``) gets the text and the turn warns ``images_dropped``. When the catalog does not
know — a custom OpenAI-compatible endpoint never probed in this process, or a model no list
names — the provider is probed once, on demand, before deciding. If that still leaves the
answer open (most local servers list models without their input types), the images are sent:
an upstream that refuses them with a client error before any output gets the call once more
without the images, and the turn warns ``images_dropped``. Images are never dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hermes_core.content import ImagePart

if TYPE_CHECKING:
    from hermes_core.errors import ProviderError
    from hermes_core.kernel import Kernel
    from hermes_core.models import ResolvedModel
    from hermes_core.providers import ChatRequest
    from hermes_core.storage import Row
    from hermes_core.turn import TurnRun

# Statuses with which an upstream refuses a request it cannot take (e.g. image parts).
REFUSED_STATUSES = frozenset({400, 413, 415, 422})


async def model_vision(kernel: Kernel, resolved: ResolvedModel) -> bool | None:
    """Return whether ``resolved`` sees images: True, False, or None when nobody can tell.

    Probes the provider first (once per process, within ``catalog.probe_timeout_s``) when the
    answer is not known yet and a probe could tell: the provider is a custom endpoint, or the
    model is in no offline list.
    """
    info = resolved.info
    if info is not None and info.vision:
        return True
    hub = kernel.hub
    custom = hub.has(resolved.provider) and hub.is_custom(resolved.provider)
    if info is not None and not custom:
        return False  # the provider's own catalog says so
    probed = hub.cache_age(resolved.provider) is not None or "error" in hub.probe_state(resolved.provider)
    if not probed:
        await hub.probe(resolved.provider, kernel.settings.catalog.probe_timeout_s)
        for model in await hub.offline_models(resolved.provider):
            if model.id == resolved.model:
                info = model
                break
    if info is not None and info.vision:
        return True
    return None  # a custom endpoint's list rarely says; let the upstream answer


async def settle(run: TurnRun, pending: Row | None = None) -> None:
    """Set ``run.vision`` for the turn's model once it is resolved (probing only for images).

    :param pending: the turn's user row when it is not stored yet.
    """
    resolved = run.resolved
    if resolved is None:
        return
    rows = run.session.rows if pending is None else [*run.session.rows, pending]
    if any(_images(r.parts) for r in rows) or any(_images(i.parts) for i in run.items):
        run.vision = await model_vision(run.kernel, resolved)
    else:
        run.vision = bool(resolved.info and resolved.info.vision)


def _images(parts: Iterable[object]) -> bool:
    return any(isinstance(p, ImagePart) for p in parts)


def refused_images(run: TurnRun, request: ChatRequest, err: ProviderError) -> bool:
    """Whether the upstream refused a call that carried images the model was not known to see.

    Then the call is made once more without them (``run.vision`` becomes False).
    """
    return (
        run.vision is None
        and err.kind == "upstream"
        and not err.retryable
        and err.status in REFUSED_STATUSES
        and any(_images(m.parts) for m in request.messages)
    )
