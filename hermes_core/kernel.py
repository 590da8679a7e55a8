"""The kernel: plugins, settings, storage, providers, live sessions and questions
(docs/reference/core.md#core-api).

Create one with :meth:`Kernel.create`, then use it inside ``async with kernel.running():``::

    kernel = Kernel.create(entry_points=["sqlite", "mock"], settings={"model": "mock:echo"})
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=Path.cwd())
        turn = await session.submit("hello", owner="me")
        async for event in turn.events():
            print(event)
        outcome = await turn.outcome
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.errors import (
    CommandNotAvailable,
    CommandUsageError,
    ConfigError,
    InvalidValue,
    SessionBusy,
    SessionNotFound,
    StorageError,
)
from hermes_core.events import SessionProblem
from hermes_core.hook_calls import call_each
from hermes_core.lease_owner import make_owner
from hermes_core.loader import PluginLoader, available_entry_points, select_names
from hermes_core.records import CommandContext, CommandResult
from hermes_core.redaction import Redactor
from hermes_core.session_open import LEASE_TTL_S, is_session_id

if TYPE_CHECKING:
    from hermes_core.content import SeedMessage
    from hermes_core.events import Event, TurnOutcome
    from hermes_core.models import ModelStatus, ProviderHub, ResolvedModel
    from hermes_core.questions import QuestionBroker
    from hermes_core.session import Session
    from hermes_core.session_queue import QueueItem
    from hermes_core.session_types import StoredSession
    from hermes_core.settings import CoreSettings
    from hermes_core.settings_store import SettingsStore
    from hermes_core.storage import SessionPage, Storage
    from hermes_core.tools import FileAccess

log = logging.getLogger("hermes.kernel")
LEASE_RENEW_S = 10.0
FALLBACK_MODEL = "mock:echo"


class Kernel:
    """Owns the plugin manager, the registry and everything live."""

    def __init__(self, loader: PluginLoader, settings: Any, store: SettingsStore | None) -> None:
        self.pm = loader.pm
        self.registry = loader.registry
        self.strict = loader.strict
        self.store = store
        self._pending_settings = settings
        self._settings: CoreSettings | None = None
        self.redactor = Redactor()
        self._broker: QuestionBroker | None = None
        self.executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="hermes-tool")
        self.lease_owner = make_owner()
        self._sessions: dict[str, Session] = {}
        self._storage: Storage | None = None
        self._hub: ProviderHub | None = None
        self._allowlist: Any = None
        self._default_model: str | None = None
        self._using_fallback = False
        self._running = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._register_core_tools()

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        *,
        entry_points: bool | Sequence[str] = True,
        disabled: Iterable[str] = (),
        plugins: Iterable[Any] = (),
        strict: bool = False,
        settings: Any = None,
        store: SettingsStore | None = None,
        trace_plugins: bool = False,
    ) -> Kernel:
        """Load plugins (stevedore imports, pluggy registers) and return a kernel not yet running.

        :param entry_points: True loads every installed plugin, False none, a list only those.
        :param disabled: entry-point names never to load (applied after the allowlist).
        :param plugins: plugin objects (modules or instances with hookimpls) to register too.
        :param strict: raise ``PluginError`` on any plugin failure instead of recording it.
        :param settings: a mapping or ``CoreSettings``; validated when the kernel starts.
        :param trace_plugins: log every hook call to ``hermes.plugins.trace`` (pluggy's monitoring).
        """
        loader = PluginLoader(strict, trace=trace_plugins)
        warnings: list[str] = []
        names = select_names(entry_points, disabled, available_entry_points(), warnings.append)
        loader.load_entry_points(names)
        loader.load_objects(plugins)
        loader.collect()
        loader.registry.warnings.extend(warnings)
        return cls(loader, settings, store)

    def configure(self, settings: Any) -> None:
        """Replace the settings to validate at start (before ``running()``)."""
        if self._running:
            raise ConfigError("the kernel is running; use apply_settings")
        self._pending_settings = settings

    @property
    def settings(self) -> CoreSettings:
        if self._settings is None:
            self._settings = self._validate(self._pending_settings)
        return self._settings

    @staticmethod
    def _validate(raw: Any) -> CoreSettings:
        from pydantic import ValidationError

        from hermes_core.settings import CoreSettings

        if isinstance(raw, CoreSettings):
            return raw
        try:
            return CoreSettings.model_validate(dict(raw or {}))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)
            )
            raise ConfigError(f"invalid settings: {problems}") from exc

    @property
    def storage(self) -> Storage:
        if self._storage is None:
            raise StorageError("the kernel is not running")
        return self._storage

    @property
    def hub(self) -> ProviderHub:
        if self._hub is None:
            raise ConfigError("the kernel is not running")
        return self._hub

    @property
    def broker(self) -> QuestionBroker:
        """The question broker (made on first use: the event records are not needed at start-up)."""
        if self._broker is None:
            from hermes_core.questions import QuestionBroker

            self._broker = QuestionBroker(self._emit_question)
        return self._broker

    @property
    def allowlist(self) -> Any:
        return self._allowlist

    # -- lifecycle ---------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Kernel]:
        """Validate settings, open storage, resolve the model and enter plugin lifespans."""
        from hermes_core import approvals
        from hermes_core.lifespans import enter_lifespans
        from hermes_core.models import ProviderHub

        settings = self.settings
        self._hub = ProviderHub(self.registry.providers, settings, self.redactor)
        self._storage = self._make_storage(settings)
        await self._storage.open()
        allow_path = settings.data_dir / "approvals.json" if settings.data_dir else None
        self._allowlist = approvals.Allowlist(allow_path)
        if getattr(self._allowlist, "warning", None):
            log.warning("%s", self._allowlist.warning)
        try:
            await self._pick_default_model()
            async with contextlib.AsyncExitStack() as stack:
                await enter_lifespans(self, stack)
                self._running = True
                renew = asyncio.create_task(self._renew_leases(), name="hermes-leases")
                try:
                    yield self
                finally:
                    renew.cancel()
                    await self._shutdown()
                    await asyncio.gather(renew, return_exceptions=True)
        finally:
            self._running = False
            await self.hub.aclose()
            await self._storage.close()
            self.executor.shutdown(wait=False, cancel_futures=True)

    def _make_storage(self, settings: CoreSettings) -> Storage:
        backend = settings.storage.backend
        if backend == "memory":
            from hermes_core.memory_storage import MemoryStorage

            return MemoryStorage()
        spec = self.registry.storage.get(backend)
        if spec is None:
            known = ", ".join(["memory", *self.registry.storage]) or "memory"
            raise ConfigError(f"unknown storage backend {backend!r}; available: {known}")
        path = settings.storage.path
        if path is None:
            if settings.data_dir is None:
                from hermes_core.memory_storage import MemoryStorage

                log.warning("no data directory configured; sessions are kept in memory only")
                return MemoryStorage()
            path = settings.data_dir / "hermes.sqlite3"
        if settings.storage.read_only:
            # Only asked for when configured, so backends without the flag keep working.
            read_only: Storage = spec.factory(path=Path(path), read_only=True)
            return read_only
        storage: Storage = spec.factory(path=Path(path))
        return storage

    async def _pick_default_model(self) -> None:
        settings = self.settings
        if settings.model:
            resolved = await self.resolve_model(settings.model)
            self._default_model = resolved.ref
            self._using_fallback = False
            hint = self.hub.missing_key_hint(resolved.provider)
            if hint is not None:  # said at start, not first met at the first request
                log.warning("model %s cannot answer yet: %s", resolved.ref, hint)
            return
        if not settings.model_fallback:
            self._default_model = None
            self._using_fallback = False
            log.warning(
                "no model configured: nothing answers until one is set "
                "(`model` in config.toml or HERMES_MODEL)"
            )
            return
        if self.hub.has("mock"):
            self._default_model = FALLBACK_MODEL
            self._using_fallback = True
            log.warning(
                "no model configured: every request is answered by the offline mock model %s, "
                "which only echoes (set `model` in config.toml or HERMES_MODEL)",
                FALLBACK_MODEL,
            )
            return
        self._default_model = None
        raise ConfigError(
            "no model provider configured: set `model` (e.g. openai:gpt-4.1-mini) in config.toml"
        )

    async def _shutdown(self) -> None:
        for session in list(self._sessions.values()):
            try:
                await session.close(reason="shutdown")
            except Exception:
                log.warning("closing session %s failed", session.id, exc_info=True)
        self.broker.close_where(lambda q: True, "shutdown")
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        # Wait for them, so none touches storage after it closes.
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _renew_leases(self) -> None:
        while True:
            await asyncio.sleep(LEASE_RENEW_S)
            for session in list(self._sessions.values()):
                try:
                    held = await self.storage.renew_lease(session.id, self.lease_owner, LEASE_TTL_S)
                except Exception as exc:
                    log.warning("renewing the lease of %s failed", session.id, exc_info=True)
                    session.report_problem(
                        "storage", f"renewing the session's writer lease failed: {exc}", once="renew"
                    )
                    continue
                session._problems_reported.discard("renew")  # report the next outage again
                if held is False and self._sessions.get(session.id) is session:
                    log.warning("the lease of %s is held by another process now", session.id)
                    session.report_problem(
                        "lease_lost",
                        "another Hermes process took over this session's writer lease; "
                        "close it here and resume it there",
                        once="lease_lost",
                    )

    def spawn(self, coro: Any, name: str | None = None) -> asyncio.Task[Any]:
        """Run a background task the kernel keeps alive and cancels at shutdown."""
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def apply_settings(self, settings: Any) -> None:
        """Apply reloaded settings: providers are rebuilt where their settings changed."""
        new = self._validate(settings)
        self._settings = new
        self.hub.configure(self.registry.providers, new)
        if new.model:
            self._default_model = (await self.resolve_model(new.model)).ref
            self._using_fallback = False

    # -- sessions ----------------------------------------------------------------------------
    async def open_session(
        self,
        session_id: str | None = None,
        *,
        source: str,
        owner: str,
        cwd: Path | None = None,
        profile: str | None = None,
        model: str | None = None,
        title: str | None = None,
        seed: Sequence[SeedMessage] = (),
        channel_key: str | None = None,
        parent_session_id: str | None = None,
        create_cwd: bool = False,
    ) -> Session:
        """Open a stored or live session, or create one; take its writer lease
        (docs/reference/core.md#sessions-and-storage).

        With ``create_cwd``, ``cwd`` (and its parents) is made when missing, on the executor
        while storage is read.
        """
        from hermes_core import session_open

        return await session_open.open_session(
            self,
            session_id,
            source=source,
            owner=owner,
            cwd=cwd,
            profile=profile,
            model=model,
            title=title,
            seed=seed,
            channel_key=channel_key,
            parent_session_id=parent_session_id,
            create_cwd=create_cwd,
        )

    def live_session(self, session_id: str) -> Session | None:
        """Return the live session with this id, if open in this process."""
        return self._sessions.get(session_id)

    @property
    def live_sessions(self) -> list[Session]:
        return list(self._sessions.values())

    async def resume(self, id_or_title: str, *, owner: str) -> Session:
        """Open a stored session by id, else by exact title (the most recently active)."""
        live = self._sessions.get(id_or_title)
        if live is not None:
            return live
        record = None
        if is_session_id(id_or_title):
            record = await self.storage.get_session(id_or_title)
        if record is None:
            record = await self.storage.find_session_by_title(id_or_title)
        if record is None:
            raise SessionNotFound(id_or_title)
        return await self.open_session(record.id, source=record.source, owner=owner)

    async def _forget_session(self, session: Session) -> None:
        if self._sessions.get(session.id) is session:
            del self._sessions[session.id]
        try:
            await self.storage.release_lease(session.id, self.lease_owner)
        except Exception:
            log.warning("releasing the lease of %s failed", session.id, exc_info=True)

    async def list_sessions(
        self, *, limit: int = 50, cursor: str | None = None, cwd: str | None = None, title: str | None = None
    ) -> SessionPage:
        """List stored sessions by last activity (keyset paging)."""
        if not isinstance(limit, int) or limit < 1:
            raise InvalidValue("limit", "a positive integer")
        return await self.storage.list_sessions(limit=min(limit, 1000), cursor=cursor, cwd=cwd, title=title)

    async def latest_session_for_channel(self, channel_key: str) -> str | None:
        """Return the most recent session carrying this channel key."""
        return await self.storage.latest_session_for_channel(channel_key)

    async def stored_session(self, session_id: str) -> StoredSession:
        """Read a stored session and its projected rows without taking the lease."""
        from hermes_core.history import project
        from hermes_core.session_types import StoredSession

        record = await self.storage.get_session(session_id)
        if record is None:
            raise SessionNotFound(session_id)
        rows = await self.storage.load_rows(session_id)
        return StoredSession(record, project(rows))

    # -- questions ---------------------------------------------------------------------------
    def answer(self, request_id: str, answer: Any) -> Literal["ok", "expired", "unknown"]:
        """Answer an open question by id; never raises (docs/reference/core.md#questions)."""
        value = answer if isinstance(answer, str) else getattr(answer, "value", str(answer))
        return self.broker.answer(request_id, value)

    def _emit_question(self, session_id: str, event: Event) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.emit(event)

    # -- models ------------------------------------------------------------------------------
    async def resolve_model(self, ref: str, *, session: Session | None = None) -> ResolvedModel:
        """Resolve ``provider:model`` or a bare name (docs/reference/core.md#providers-and-models)."""
        from hermes_core.models import resolve

        current = None
        if session is not None:
            ref_now, _ = self._session_model(session)
            current = ref_now.partition(":")[0] if ref_now else None
        elif self._default_model:
            current = self._default_model.partition(":")[0]
        return await resolve(self.hub, self.settings.model_aliases, ref, current)

    async def model_catalog(
        self, *, refresh: bool = False, network: bool = True, session: Session | None = None
    ) -> dict[str, Any]:
        """Return the provider-aware model catalog with its probe policy."""
        from hermes_core.catalog import build_catalog

        current = self._session_model(session)[0] if session is not None else self._default_model
        settings = self.settings.catalog
        return await build_catalog(
            self.hub,
            current=current,
            refresh=refresh,
            network=network,
            probe_timeout_s=settings.probe_timeout_s,
            cache_ttl_s=settings.cache_ttl_s,
            background=self._tasks,
        )

    def model_status(self, session: Session | None = None) -> ModelStatus:
        """Describe the default model (or ``session``'s): where it came from and what stops it
        answering, if anything.

        Every surface reports the same thing from this: the start-up log, ``hermes acp --check``,
        ``/health/detailed``.
        """
        from hermes_core.models import ModelStatus

        if session is not None:
            ref, source = self._session_model(session)
        else:
            ref = self._default_model
            source = "fallback" if self._using_fallback else self.settings.model_source
        provider = ref.partition(":")[0] if ref else None
        problem = self.hub.missing_key_hint(provider) if provider and self.hub.has(provider) else None
        return ModelStatus(ref, source, problem)

    def has_usable_provider(self) -> bool:
        """False when only the fallback mock would answer."""
        return not self._using_fallback and self._default_model is not None

    @property
    def default_model(self) -> str | None:
        return self._default_model

    async def set_default_model(self, ref: str) -> ResolvedModel:
        """Make ``ref`` the default model: written to ``config.toml`` and used from now on.

        Sessions with a model of their own keep it. Raises ``ModelNotFound``/``ModelAmbiguous``
        (nothing changes) or ``InvalidValue`` when there is no settings store to write to.
        """
        resolved = await self.resolve_model(ref)
        if self.store is None:
            raise InvalidValue("scope", message="global model scope needs a settings store")
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self.executor, self.store.set, "model", resolved.ref)
        self._set_default_model(resolved.ref)
        return resolved

    def _set_default_model(self, ref: str) -> None:
        """Make ``ref`` the model of sessions without one of their own (``/model --global``)."""
        self._default_model = ref
        self._using_fallback = False
        self._settings = self.settings.model_copy(update={"model": ref, "model_source": "config"})

    def _session_model(self, session: Session) -> tuple[str | None, str]:
        if session.record.model:
            return session.record.model, "session"
        if self._using_fallback:
            return self._default_model, "fallback"
        return self._default_model, self.settings.model_source

    def _turn_model_ref(self, session: Session, items: Sequence[QueueItem]) -> tuple[str | None, str]:
        for item in items:
            if item.model:
                return item.model, "turn"
        if session._once_model:
            return session._once_model, "once"
        return self._session_model(session)

    async def _turn_model(self, session: Session, items: Sequence[QueueItem]) -> ResolvedModel:
        ref, source = self._turn_model_ref(session, items)
        if source == "once":
            session._once_model = None
        if not ref:
            raise ConfigError("no model configured")
        return await self.resolve_model(ref, session=session)

    async def one_shot(
        self,
        messages: Sequence[SeedMessage],
        *,
        model: str | None = None,
        purpose: str = "one_shot",
        system: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> str:
        """Make one tool-less, unpersisted model call and return its text.

        :param system: the instruction sent as the system prompt.
        :param options: provider options such as ``max_tokens``.
        """
        from hermes_core.providers import ChatMessage, ChatRequest, TextChunk

        ref = model or self._default_model
        if not ref:
            raise ConfigError("no model configured")
        resolved = await self.resolve_model(ref)
        provider = self.hub.get(resolved.provider)
        request = ChatRequest(
            model=resolved.model,
            messages=tuple(ChatMessage(m.role, m.text, parts=m.parts) for m in messages),
            system=system,
            options=dict(options or {}),
            purpose=purpose,  # type: ignore[arg-type]
        )
        out: list[str] = []
        async for chunk in provider.stream(request):
            if isinstance(chunk, TextChunk):
                out.append(chunk.text)
        return "".join(out)

    # -- slash commands ----------------------------------------------------------------------
    async def dispatch_slash(
        self, session: Session | None, text: str, *, surface: str
    ) -> CommandResult | None:
        """Run a registered ``/command`` (docs/slash-commands.md#where-commands-are-recognised); None when the
        text is not one."""
        if not isinstance(text, str):
            return None
        stripped = text.strip()
        match = re.match(r"^/([A-Za-z0-9][A-Za-z0-9_\-]*)(?:\s+(.*))?$", stripped, re.DOTALL)
        if not match:
            return None
        name, args = match.group(1), (match.group(2) or "").strip()
        spec = self.registry.command(name)
        if spec is None:
            return None
        if surface in spec.unavailable_on or (spec.needs_terminal_ui and surface != "tui"):
            raise CommandNotAvailable(spec.name, surface)
        if spec.needs_session and session is None:
            raise CommandUsageError(spec.usage or f"/{spec.name}", f"/{spec.name} needs a session")
        if spec.busy_blocked and session is not None and session.busy:
            raise SessionBusy("busy", f"/{spec.name} cannot run while a turn is running; interrupt first")
        return await spec.handler(
            CommandContext(kernel=self, session=session, args=args, surface=surface, name=spec.name)
        )

    # -- tools and policy --------------------------------------------------------------------
    def _register_core_tools(self) -> None:
        from hermes_core.core_tools import request_secret_spec

        spec = request_secret_spec()
        if spec.name not in self.registry.tools:
            self.registry.tools[spec.name] = spec
            self.registry.owners[("tools", spec.name)] = "core"

    def default_file_access(self) -> FileAccess:
        from hermes_core.core_tools import LocalFileAccess

        return LocalFileAccess()

    def _kill_processes(self, procs: list[Any]) -> None:
        from hermes_core.core_tools import kill_group

        for proc in list(procs):
            self.executor.submit(kill_group, proc, 0.5)
        procs.clear()

    async def _store_secret(self, env_var: str, value: str) -> None:
        if "\n" in value or "\r" in value:
            raise InvalidValue("value", message="a secret value cannot contain a newline")
        if self.store is None:
            raise ConfigError("no settings store to keep the secret in")
        self.redactor.add(value)
        await asyncio.get_running_loop().run_in_executor(self.executor, self.store.set_env, env_var, value)
        raw = await asyncio.get_running_loop().run_in_executor(self.executor, self.store.load)
        await self.apply_settings(raw)

    # -- events ------------------------------------------------------------------------------
    def _observe(self, session: Session, event: Event) -> None:
        for outcome in call_each(self.pm, "hermes_on_event", session=session, event=event):
            if outcome.error is not None:
                log.warning("event observer %s failed", outcome.plugin, exc_info=outcome.error)
                if not isinstance(event, SessionProblem):  # never report a report's failure
                    text = f"plugin {outcome.plugin!r} failed while observing events: {outcome.error}"
                    session.report_problem("plugin", text, once=f"plugin:{outcome.plugin}")

    def _after_turn(self, session: Session, outcome: TurnOutcome) -> None:
        from hermes_core.titles import maybe_refine

        maybe_refine(self, session)

    def _schedule_extra_write(self, session: Session, extra: dict[str, str]) -> None:
        async def write() -> None:
            try:
                await session._update_record(extra=extra)
            except Exception as exc:
                log.warning("saving the settings of %s failed", session.id, exc_info=True)
                session.report_problem("storage", f"saving this session's settings failed: {exc}")

        if self._running:
            self.spawn(write())
