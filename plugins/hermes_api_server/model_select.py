"""Per-request model selection: the API's per-turn hot swap (docs/reference/api-server.md#model-selection)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_api_server.errors import ApiError, invalid
from hermes_api_server.http_util import CONTROL_RE
from hermes_core import ModelAmbiguous, ModelNeedsKey, ModelNotFound, ModelRef

if TYPE_CHECKING:
    from hermes_api_server.settings import ApiSettings
    from hermes_core import Kernel, ResolvedModel, Session

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
MODEL_MAX_CHARS = 256  # a model reference is echoed in X-Hermes-Model


@dataclass(slots=True)
class ModelChoice:
    """What the request asked for and the per-turn override to apply."""

    requested: str  # echoed as the response's ``model``
    requested_raw: str | None  # what the client sent, if anything
    ref: str | None  # the per-turn override; None = the session's model
    source: str  # request, alias, or decided at the turn (session/default)
    options: dict[str, Any] | None
    #: ``ref`` as resolved while choosing: the turn runs on it without resolving it again.
    resolved: ResolvedModel | None = None

    @property
    def for_turn(self) -> str | ResolvedModel | None:
        """What the turn's ``submit(model=...)`` gets: the resolved model when there is one."""
        return self.resolved if self.resolved is not None else self.ref

    def resolved_for(self, session: Session) -> tuple[str, str]:
        """Return (provider:model, model_source) as this turn will run."""
        if self.ref is not None:
            return self.ref, self.source
        info = session.info()
        source = "session" if info.model_source == "session" else "default"
        return info.model or "", source


def model_options(body: dict[str, Any]) -> dict[str, Any] | None:
    """Validate ``model_options`` (and Responses ``reasoning.effort``)."""
    raw = body.get("model_options")
    if raw is None:
        out: dict[str, Any] = {}
    elif not isinstance(raw, dict):
        raise invalid("model_options must be an object", "model_options")
    else:
        out = {}
        effort = raw.get("reasoning_effort")
        if effort is not None:
            if effort not in EFFORTS:
                raise invalid(f"reasoning_effort must be one of {', '.join(EFFORTS)}", "model_options")
            out["reasoning_effort"] = effort
        reasoning = raw.get("reasoning")
        if reasoning is not None:
            if not isinstance(reasoning, dict):
                raise invalid("model_options.reasoning must be an object", "model_options")
            if "enabled" in reasoning and not isinstance(reasoning["enabled"], bool):
                raise invalid("model_options.reasoning.enabled must be a boolean", "model_options")
            if reasoning.get("effort") is not None and reasoning["effort"] not in EFFORTS:
                raise invalid("model_options.reasoning.effort is not a known effort", "model_options")
            out["reasoning"] = dict(reasoning)
        tier = raw.get("service_tier")
        if tier is not None:
            if not isinstance(tier, str):
                raise invalid("model_options.service_tier must be a string", "model_options")
            out["service_tier"] = tier
    top = body.get("reasoning")
    if isinstance(top, dict) and top.get("effort") is not None:
        if top["effort"] not in EFFORTS:
            raise invalid("reasoning.effort is not a known effort", "reasoning")
        out.setdefault("reasoning_effort", top["effort"])
    return out or None


async def choose_model(
    kernel: Kernel, settings: ApiSettings, body: dict[str, Any], *, always_resolve: bool
) -> ModelChoice:
    """Apply the docs/reference/api-server.md#model-selection rules to a request body.

    :param always_resolve: True on ``/v1/runs``, where bare names always resolve.
    :raises ApiError: ``invalid_value``, ``model_not_found``, ``model_ambiguous`` or
        ``model_unavailable`` (its provider has no API key).
    """
    model = body.get("model")
    provider = body.get("provider")
    options = model_options(body)
    if model is not None and not isinstance(model, str):
        raise invalid("model must be a string", "model")
    if model is not None and (len(model) > MODEL_MAX_CHARS or CONTROL_RE.search(model)):
        # Checked before anything runs: the reference goes into a response header.
        raise invalid(
            f"model must be at most {MODEL_MAX_CHARS} characters without control characters", "model"
        )
    if provider is not None and (not isinstance(provider, str) or not provider):
        raise invalid("provider must be a non-empty string", "provider")
    name = settings.model_name
    if not model or model == name:
        if provider:
            raise invalid("provider needs a model", "provider")
        return ModelChoice(name, model or None, None, "default", options)
    if model in settings.model_aliases:
        if provider:
            raise invalid("an alias cannot be combined with provider", "provider")
        target = settings.model_aliases[model]
        return ModelChoice(model, model, target, "alias", options, await _resolve(kernel, target))
    parsed = ModelRef.parse(model, kernel.providers.has)
    if parsed.provider is not None and parsed.model:
        if provider and provider != parsed.provider:
            raise invalid("provider conflicts with the model reference", "provider")
        # The same check the core makes when the turn starts, made before anything is created:
        # a provider with a closed model list refuses names it does not serve.
        return ModelChoice(model, model, model, "request", options, await _resolve(kernel, model))
    if provider:
        if not kernel.providers.has(provider):
            raise ApiError(400, "model_not_found", f"unknown provider: {provider}", param="provider")
        ref = f"{provider}:{model}"
        return ModelChoice(model, model, ref, "request", options, await _resolve(kernel, ref))
    if not (always_resolve or settings.direct_model_requests):
        return ModelChoice(model, model, None, "default", options)
    resolved = await _resolve(kernel, model)
    return ModelChoice(model, model, resolved.ref, "request", options, resolved)


def model_error(exc: ModelNotFound | ModelAmbiguous) -> ApiError:
    """Return the 400 for a model reference the core refused, listing its candidates.

    :param exc: the core's error.
    :returns: ``model_ambiguous``, ``model_not_found``, or ``model_unavailable`` (only providers
        without an API key offer it; ``keys`` maps each to the variable to set), with
        ``candidates`` in the error object.
    """
    extra: dict[str, Any] = {"candidates": list(exc.candidates)}
    if isinstance(exc, ModelNeedsKey):
        extra["keys"] = dict(exc.keys)
        return ApiError(400, "model_unavailable", str(exc), param="model", extra=extra)
    code = "model_ambiguous" if isinstance(exc, ModelAmbiguous) else "model_not_found"
    return ApiError(400, code, str(exc), param="model", extra=extra)


async def _resolve(kernel: Kernel, ref: str) -> ResolvedModel:
    """Resolve ``ref`` with the core's resolver; return the resolved model.

    A model whose provider has no API key is refused here: the turn could only fail.

    :raises ApiError: 400 ``model_not_found``, ``model_ambiguous`` or ``model_unavailable``.
    """
    try:
        resolved = await kernel.resolve_model(ref)
        kernel.models.require_usable(resolved, ref)
    except (ModelAmbiguous, ModelNotFound) as exc:
        raise model_error(exc) from None
    return resolved
