"""The kernel: where plugins, settings, storage, providers, sessions and questions are assembled.

Create one with :meth:`Kernel.create`, then use it inside ``async with kernel.running():``::

    kernel = Kernel.create(entry_points=["sqlite", "mock"], settings={"model": "mock:echo"})
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=Path.cwd())
        turn = await session.submit("hello", owner="me")
        async for event in turn.events():
            print(event)
        outcome = await turn.outcome

State lives with owners (``sessions``, ``models``, ``providers``, ``questions``, ``tool_sources``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.errors import ConfigError, StorageError
from hermes_core.event_log.owner import EventLogs
from hermes_core.lease_owner import make_owner
from hermes_core.loader import EntryPointSource, PluginLoader, load_plugins
from hermes_core.model_choice import Models
from hermes_core.provider_directory import ProviderDirectory
from hermes_core.record_space import Records
from hermes_core.redaction import Redactor
from hermes_core.session.table import Sessions
from hermes_core.task_failures import keep
from hermes_core.tool_sources import ToolSources
from hermes_core.tracing import Tracer, build_tracer

if TYPE_CHECKING:
    from hermes_core.approvals import Allowlist
    from hermes_core.budgets import Budgets
    from hermes_core.models import ModelStatus, ProviderHub, ResolvedModel
    from hermes_core.questions import QuestionBroker
    from hermes_core.records import CommandResult
    from hermes_core.session.live import Session
    from hermes_core.settings import CoreSettings
    from hermes_core.settings_store import SettingsStore
    from hermes_core.storage import Storage
    from hermes_core.tools import FileAccess


class Kernel:
    """Owns the plugin manager, the registry and the owners of everything live."""

    def __init__(self, loader: PluginLoader, settings: Any, store: SettingsStore | None) -> None:
        self.pm = loader.pm
        self.registry = loader.registry
        self.strict = loader.strict
        self.store = store
        self._pending_settings = settings
        self._settings: CoreSettings | None = None
        self.redactor = Redactor()
        self.executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="hermes-tool")
        self.lease_owner = make_owner()
        #: Background tasks the kernel keeps alive and cancels at shutdown (see :meth:`spawn`).
        self.background_tasks: set[asyncio.Task[Any]] = set()
        self.sessions = Sessions(self)
        self.models = Models(self)
        self.tool_sources = ToolSources(self.redactor)
        self.events, self.records = EventLogs(self), Records(self)
        self._budgets: Budgets | None = None
        self._questions: QuestionBroker | None = None
        self._storage: Storage | None = None
        self._hub: ProviderHub | None = None
        self._allowlist: Allowlist | None = None
        self._running = False
        #: The tracer a ``hermes_tracers`` plugin built at start (None: tracing is off).
        self.tracer: Tracer | None = None
        from hermes_core.core_tools import register_core_tools

        register_core_tools(self.registry)

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
        discovered: Mapping[str, EntryPointSource] | None = None,
    ) -> Kernel:
        """Load plugins (stevedore, or the ``discovered`` rows, import; pluggy registers) into a new kernel.
        :param entry_points: True loads every installed plugin, False none, a list only those.
        :param disabled: entry-point names never to load (applied after the allowlist).
        :param plugins: plugin objects (modules or instances with hookimpls) to register too.
        :param strict: raise ``PluginError`` on any plugin failure instead of recording it.
        :param settings: a mapping or ``CoreSettings``; validated when the kernel starts.
        :param trace_plugins: log every hook call to ``hermes.plugins.trace`` (pluggy's monitoring).
        """
        loader = load_plugins(entry_points, disabled, plugins, discovered, strict=strict, trace=trace_plugins)
        return cls(loader, settings, store)

    def configure(self, settings: Any) -> None:
        """Replace the settings to validate at start (before ``running()``)."""
        if self._running:
            raise ConfigError("the kernel is running; use apply_settings")
        self._pending_settings = settings

    @property
    def settings(self) -> CoreSettings:
        """The validated settings in force."""
        if self._settings is None:
            from hermes_core.settings import validate_settings

            self._settings = validate_settings(self._pending_settings)
        return self._settings

    def replace_settings(self, settings: CoreSettings) -> None:
        """Put already-validated settings in force without rebuilding providers."""
        self._settings = settings

    @property
    def is_running(self) -> bool:
        return self._running

    @property
    def storage(self) -> Storage:
        """The open storage backend (kernel-internal; transports use ``sessions``)."""
        if self._storage is None:
            raise StorageError("the kernel is not running")
        return self._storage

    @property
    def hub(self) -> ProviderHub:
        """The provider instances (kernel-internal; transports use ``providers``)."""
        if self._hub is None:
            raise ConfigError("the kernel is not running")
        return self._hub

    @property
    def providers(self) -> ProviderDirectory:
        """The provider directory: which providers exist, their offline models, key hints."""
        return ProviderDirectory(self.hub)

    @property
    def questions(self) -> QuestionBroker:
        """Open approval/clarify/sudo/secret questions (made on first use, off the start-up path)."""
        if self._questions is None:
            from hermes_core.questions import QuestionBroker

            self._questions = QuestionBroker(self.sessions.emit)
        return self._questions

    @property
    def budgets(self) -> Budgets:
        """Spend and rate limits (made on first use: a session opens without them)."""
        if self._budgets is None:
            from hermes_core.budgets import Budgets  # kept off the start-up path

            self._budgets = Budgets(self)
        return self._budgets

    @property
    def allowlist(self) -> Allowlist | None:
        return self._allowlist

    # -- lifecycle ---------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Kernel]:
        """Validate settings, open storage, resolve the model and enter plugin lifespans."""
        from hermes_core import approvals
        from hermes_core.lifespans import enter_lifespans
        from hermes_core.models import ProviderHub
        from hermes_core.storage_choice import make_storage

        settings = self.settings
        self._hub = ProviderHub(self.registry.providers, settings, self.redactor)
        self._storage = make_storage(self.registry, settings)
        await self._storage.open()
        self._allowlist = approvals.open_allowlist(settings.data_dir)
        try:
            self.events.start()
            self.tracer = build_tracer(self)
            await self.models.pick_default()
            async with contextlib.AsyncExitStack() as stack:
                await enter_lifespans(self, stack)
                self._running = True
                renew = asyncio.create_task(self.sessions.renew_leases(), name="hermes-leases")
                try:
                    yield self
                finally:
                    renew.cancel()
                    await self._shutdown()
                    await asyncio.gather(renew, return_exceptions=True)
        finally:
            self._running = False
            await asyncio.gather(self.hub.aclose(), *[b.aclose() for b in (self._budgets,) if b])
            await self._storage.close()
            self.executor.shutdown(wait=False, cancel_futures=True)

    async def _shutdown(self) -> None:
        await self.sessions.close_all("shutdown")
        self.questions.close_where(lambda q: True, "shutdown")
        for task in (tasks := list(self.background_tasks)):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # none touches storage after it closes

    def spawn(self, coro: Any, name: str | None = None) -> asyncio.Task[Any]:
        """Run a background task the kernel keeps alive and cancels at shutdown."""
        return keep(self.background_tasks, asyncio.create_task(coro, name=name))

    async def apply_settings(self, settings: Any) -> None:
        """Apply reloaded settings: see :func:`hermes_core.settings_apply.apply_settings`."""
        from hermes_core.settings_apply import apply_settings

        await apply_settings(self, settings)

    # -- delegates kept for their many callers -----------------------------------------------
    async def open_session(self, session_id: str | None = None, **options: Any) -> Session:
        """Open or create a session: see :meth:`Sessions.open`."""
        return await self.sessions.open(session_id, **options)

    def live_session(self, session_id: str) -> Session | None:
        """Return the live session with this id, if open in this process."""
        return self.sessions.get(session_id)

    async def resolve_model(self, ref: str, *, session: Session | None = None) -> ResolvedModel:
        """Resolve ``provider:model`` or a bare name: see :meth:`Models.resolve`."""
        return await self.models.resolve(ref, session=session)

    async def model_catalog(self, **options: Any) -> dict[str, Any]:
        """The provider-aware model catalog: see :meth:`Models.catalog` for the options."""
        return await self.models.catalog(**options)

    def model_status(self, session: Session | None = None) -> ModelStatus:
        """Where the model comes from and what stops it answering: see :meth:`Models.status`."""
        return self.models.status(session)

    @property
    def default_model(self) -> str | None:
        return self.models.default

    def answer(self, request_id: str, answer: Any) -> Literal["ok", "expired", "unknown"]:
        """Answer an open question by id; never raises (docs/reference/core.md#questions)."""
        value = answer if isinstance(answer, str) else getattr(answer, "value", str(answer))
        return self.questions.answer(request_id, value)

    async def dispatch_slash(
        self, session: Session | None, text: str, *, surface: str, **scope: Any
    ) -> CommandResult | None:
        """Run a registered ``/command`` (docs/slash-commands.md#where-commands-are-recognised); None when
        the text is not one. ``scope``: ``sees``, ``charge`` (:func:`hermes_core.slash.dispatch_slash`)."""
        from hermes_core.slash import dispatch_slash

        return await dispatch_slash(self, session, text, surface=surface, **scope)

    def default_file_access(self) -> FileAccess:
        """The file access of a new session (local files; an editor may replace it)."""
        from hermes_core.core_tools import LocalFileAccess

        return LocalFileAccess()
