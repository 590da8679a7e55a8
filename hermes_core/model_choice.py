"""Which model answers: the default, a session's own, a turn's, and one-shot calls.

:class:`Models` is reached as ``kernel.models``. It owns the default model reference (and
whether it is the offline fallback) and answers every "which model?" question the sessions,
turns and transports ask, so nothing else keeps a copy of that state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes_core.errors import ConfigError, InvalidValue, ProviderError
from hermes_core.refs import ModelRef

if TYPE_CHECKING:
    from hermes_core.budgets import ChargeTo
    from hermes_core.content import SeedMessage
    from hermes_core.kernel import Kernel
    from hermes_core.models import ModelStatus, ResolvedModel
    from hermes_core.session.live import Session
    from hermes_core.session.queue import QueueItem

log = logging.getLogger("hermes.kernel")
FALLBACK_MODEL = "mock:echo"


class Models:
    """The kernel's model choices; one per kernel (``kernel.models``)."""

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._default: str | None = None
        self._using_fallback = False

    # -- the default -------------------------------------------------------------------------
    @property
    def default(self) -> str | None:
        """The ``provider:model`` reference sessions without a model of their own use."""
        return self._default

    @property
    def using_fallback(self) -> bool:
        """True when the default is the offline mock chosen because nothing was configured."""
        return self._using_fallback

    def has_usable_provider(self) -> bool:
        """False when only the fallback mock would answer."""
        return not self._using_fallback and self._default is not None

    async def pick_default(self) -> None:
        """Choose the default at start-up from the settings (or the fallback mock)."""
        kernel = self._kernel
        settings = kernel.settings
        if settings.model:
            # The configured model is taken even when its provider lacks its key: that is said
            # below, and a bare name must not silently pick another provider.
            resolved = await self.resolve(settings.model, runnable_only=False)
            self._default = resolved.ref
            self._using_fallback = False
            hint = kernel.hub.missing_key_hint(resolved.provider)
            if hint is not None:  # said at start, not first met at the first request
                log.warning("model %s cannot answer yet: %s", resolved.ref, hint)
            return
        if not settings.model_fallback:
            self._default = None
            self._using_fallback = False
            log.warning(
                "no model configured: nothing answers until one is set "
                "(`model` in config.toml or HERMES_MODEL)"
            )
            return
        if kernel.hub.has("mock"):
            self._default = FALLBACK_MODEL
            self._using_fallback = True
            log.warning(
                "no model configured: every request is answered by the offline mock model %s, "
                "which only echoes (set `model` in config.toml or HERMES_MODEL)",
                FALLBACK_MODEL,
            )
            return
        self._default = None
        raise ConfigError(
            "no model provider configured: set `model` (e.g. openai:gpt-4.1-mini) in config.toml"
        )

    async def settings_changed(self) -> None:
        """Follow reloaded settings: a configured model becomes the default."""
        model = self._kernel.settings.model
        if model:
            self._default = (await self.resolve(model, runnable_only=False)).ref
            self._using_fallback = False

    async def switch(self, ref: str) -> ResolvedModel:
        """Make ``ref`` the default model: written to ``config.toml`` and used from now on.

        Sessions with a model of their own keep it. Raises ``ModelNotFound``/``ModelAmbiguous``
        (nothing changes), ``ModelNeedsKey`` when its provider has no API key, or ``InvalidValue``
        when there is no settings store to write to.
        """
        kernel = self._kernel
        resolved = await self.resolve(ref)
        self.require_usable(resolved, ref)
        if kernel.store is None:
            raise InvalidValue("scope", message="global model scope needs a settings store")
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(kernel.executor, kernel.store.set, "model", resolved.ref)
        self.adopt(resolved.ref)
        return resolved

    def adopt(self, ref: str) -> None:
        """Make ``ref`` the model of sessions without one of their own, in this process only."""
        self._default = ref
        self._using_fallback = False
        kernel = self._kernel
        kernel.replace_settings(kernel.settings.model_copy(update={"model": ref, "model_source": "config"}))

    # -- lookups -----------------------------------------------------------------------------
    async def resolve(
        self, ref: str, *, session: Session | None = None, runnable_only: bool = True
    ) -> ResolvedModel:
        """Resolve ``provider:model`` or a bare name (docs/reference/core.md#providers-and-models).

        A bare name looks in the current provider first (``session``'s, else the default's),
        then in the providers that can answer; the models ``session`` has used count as listed.

        :param runnable_only: refuse a bare name only keyless providers offer (``ModelNeedsKey``).
        """
        from hermes_core.model_resolve import resolve

        current = None
        if session is not None:
            ref_now, _ = self.for_session(session)
            current = ModelRef.split(ref_now).provider
        elif self._default:
            current = ModelRef.split(self._default).provider
        kernel = self._kernel
        return await resolve(
            kernel.hub,
            kernel.settings.model_aliases,
            ref,
            current,
            known=self._known(session),
            runnable_only=runnable_only,
            probe_timeout=kernel.settings.catalog.probe_timeout_s,
        )

    def require_usable(self, resolved: ResolvedModel, requested: str) -> None:
        """Refuse a model whose provider cannot answer for want of its API key.

        :param requested: what the caller asked for, quoted in the error.
        :raises ModelNeedsKey: naming the variable (or setting) to set.
        """
        from hermes_core.model_resolve import needs_key

        refusal = needs_key(self._kernel.hub, resolved, requested)
        if refusal is not None:
            raise refusal

    def _known(self, session: Session | None) -> dict[str, list[str]]:
        """The :meth:`used_models` by provider: ids to treat as listed."""
        known: dict[str, list[str]] = {}
        for used in self.used_models(session):
            split = ModelRef.split(used)
            if split.provider:
                known.setdefault(split.provider, []).append(split.model)
        return known

    def used_models(self, session: Session | None) -> list[str]:
        """Return the models a session can go back to, newest first, without repeats.

        Its current model, every model that answered in it or that it switched to (its rows
        carry them), and the default model; without a session, the default alone.
        """
        found: list[str] = []
        if session is not None:
            now, _ = self.for_session(session)
            if now:
                found.append(now)
            found.extend(r.model for r in reversed(session.rows) if r.model)
        if self._default:
            found.append(self._default)
        return list(dict.fromkeys(found))

    async def catalog(
        self,
        *,
        refresh: bool = False,
        network: bool = True,
        session: Session | None = None,
        prices: bool = False,
    ) -> dict[str, Any]:
        """Return the provider-aware model catalog with its probe policy.

        :param prices: add per-model prices from the ``hermes_price_sources`` tables (the
            picker surfaces; the first lookup may load a table on the executor).
        """
        from hermes_core.catalog import build_catalog

        kernel = self._kernel
        current = self.for_session(session)[0] if session is not None else self._default
        settings = kernel.settings.catalog
        return await build_catalog(
            kernel.hub,
            current=current,
            refresh=refresh,
            network=network,
            probe_timeout_s=settings.probe_timeout_s,
            cache_ttl_s=settings.cache_ttl_s,
            background=kernel.background_tasks,
            prices=list(kernel.registry.prices.values()) if prices else None,
            executor=kernel.executor,
            known=self._known(session),
        )

    def status(self, session: Session | None = None) -> ModelStatus:
        """Describe the default model (or ``session``'s): where it came from and what stops it
        answering, if anything.

        Every surface reports the same thing from this: the start-up log, ``hermes acp --check``,
        ``/health/detailed``.
        """
        from hermes_core.models import ModelStatus

        kernel = self._kernel
        if session is not None:
            ref, source = self.for_session(session)
        else:
            ref = self._default
            source = "fallback" if self._using_fallback else kernel.settings.model_source
        provider = ModelRef.split(ref).provider
        hub = kernel.hub
        problem = hub.missing_key_hint(provider) if provider and hub.has(provider) else None
        return ModelStatus(ref, source, problem)

    def for_session(self, session: Session) -> tuple[str | None, str]:
        """Return the model reference ``session`` uses and where it comes from."""
        if session.record.model:
            return session.record.model, "session"
        if self._using_fallback:
            return self._default, "fallback"
        return self._default, self._kernel.settings.model_source

    def for_turn(self, session: Session, items: Sequence[QueueItem]) -> tuple[str | None, str]:
        """Return the reference the next turn of ``session`` (running ``items``) would use."""
        for item in items:
            if item.model:
                return item.model, "turn"
        if session.once_model:
            return session.once_model, "once"
        return self.for_session(session)

    async def resolve_for_turn(self, session: Session, items: Sequence[QueueItem]) -> ResolvedModel:
        """Resolve the model of the turn starting now; a ``/model --once`` choice is used up."""
        ref, source = self.for_turn(session, items)
        if source == "once":
            session.once_model = None
        if not ref:
            raise ConfigError("no model configured")
        return await self.resolve_turn_ref(session, items, ref, source)

    async def resolve_turn_ref(
        self, session: Session, items: Sequence[QueueItem], ref: str, source: str
    ) -> ResolvedModel:
        """Resolve ``ref`` (what :meth:`for_turn` chose), unless the submitting host handed the
        turn's model over resolved already (``submit(model=ResolvedModel)``)."""
        if source == "turn":
            given = next((item.resolved for item in items if item.model), None)
            if given is not None and given.ref == ref:
                return given
        return await self.resolve(ref, session=session)

    async def one_shot(
        self,
        messages: Sequence[SeedMessage],
        *,
        model: str | None = None,
        purpose: str = "one_shot",
        system: str | None = None,
        options: Mapping[str, Any] | None = None,
        charge: ChargeTo | None = None,
    ) -> str:
        """Make one tool-less, unpersisted model call and return its text.

        The call is budgeted like a turn's (docs/reference/budgets.md#outside-a-turn): its worst
        case is reserved in ``charge``'s buckets first, settled from the reported usage, refunded
        when it fails.

        :param system: the instruction sent as the system prompt.
        :param options: provider options such as ``max_tokens``.
        :param charge: who pays (None: the configured default key and tenant; see
            :func:`~hermes_core.budget_calls.charge_for_session` for a session's call).
        :raises BudgetExceeded: the call does not fit in a bucket; it was not made.
        """
        from hermes_core.budget_calls import ChargedCall
        from hermes_core.providers import (
            CHUNK_TYPES,
            ChatMessage,
            ChatRequest,
            TextChunk,
            UsageChunk,
            not_a_chunk,
        )

        ref = model or self._default
        if not ref:
            raise ConfigError("no model configured")
        resolved = await self.resolve(ref)
        provider = self._kernel.hub.get(resolved.provider)
        request = ChatRequest(
            model=resolved.model,
            messages=tuple(ChatMessage(m.role, m.text, parts=m.parts) for m in messages),
            system=system,
            options=dict(options or {}),
            purpose=purpose,  # type: ignore[arg-type]
        )
        budget = ChargedCall(self._kernel.budgets, charge, resolved.provider)
        request = await budget.reserve(request)
        out: list[str] = []
        used: UsageChunk | None = None
        try:
            async for chunk in provider.stream(request):
                if isinstance(chunk, TextChunk):
                    out.append(chunk.text)
                elif isinstance(chunk, UsageChunk):
                    used = chunk
                elif not isinstance(chunk, CHUNK_TYPES):
                    raise not_a_chunk(resolved.provider, chunk)
        except BaseException as exc:
            if used is not None:
                await budget.settle(used.input, used.output)
            elif out:  # cut off after text streamed: what streamed was paid for
                await budget.settle(_estimate_input(request), len("".join(out)) // 4)
            else:
                await budget.refund()
            if not isinstance(exc, ProviderError):
                raise
            # its text reaches hosts and logs: mask it like a turn's
            raise ProviderError(
                exc.kind,
                self._kernel.redactor(exc.message),
                retryable=exc.retryable,
                retry_after=exc.retry_after,
                status=exc.status,
            ) from None
        text = "".join(out)
        if used is not None:
            await budget.settle(used.input, used.output)
        else:  # the provider reported no usage: charge the estimate
            await budget.settle(_estimate_input(request), len(text) // 4)
        return text


def _estimate_input(request: Any) -> int:
    from hermes_core.turn.budget import estimate_input

    return estimate_input(request)
