"""What a host changes on a live session: its model, workspace, approval profile, title,
reasoning effort, system overlay, tool filter and background processes
(docs/reference/core.md#core-api, #branch-compress-titles-model-switch).

:class:`SessionControls` is a part of :class:`~hermes_core.session.Session`; the tool filter and
the processes are its own.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.backref import BackRef
from hermes_core.errors import InvalidValue
from hermes_core.session.types import ModelSwitch, TitleResult
from hermes_core.storage import NewRow

if TYPE_CHECKING:
    from hermes_core.session.live import Session
    from hermes_core.session.state import SessionState

PROFILES = ("ask_everything", "default", "accept_edits", "off")


class SessionControls:
    """The part of a session a host sets: model, cwd, profile, title, effort, overlay, tools.

    It owns the tool filter and the background processes tools started; the settings it
    changes are columns of the session's record, written through :class:`SessionState`.
    """

    #: The owning session, held weakly (it holds this part).
    _session: BackRef[Session] = BackRef()

    def __init__(self, session: Session, state: SessionState) -> None:
        self._session = session
        self._state = state
        self._hidden_tools: frozenset[str] = frozenset()
        self._processes: list[Any] = []

    async def switch_model(
        self, ref: str, *, scope: Literal["session", "global", "once"] = "session"
    ) -> ModelSwitch:
        """Switch the model from the next turn on
        (docs/reference/core.md#branch-compress-titles-model-switch)."""
        if scope not in ("session", "global", "once"):
            raise InvalidValue("scope", ("session", "global", "once"))
        resolved = await self._session.kernel.resolve_model(ref, session=self._session)
        # A provider without its key would fail every later turn: refuse, naming the key.
        self._session.kernel.models.require_usable(resolved, ref)
        previous, _ = self._session.kernel.models.for_session(self._session)
        if scope == "once":
            self._session.once_model = resolved.ref
            self._session.mark_changed("model")
            return ModelSwitch(resolved.ref, resolved.provider, resolved.model, scope, previous)
        if scope == "global":
            await self._session.kernel.models.switch(resolved.ref)
        marker_id: int | None = None
        await self._state.update_record(model=resolved.ref, provider=resolved.provider)
        if not self._state.persisted:
            # A new session writes nothing until its first turn; store the record now so the
            # choice survives the process (``hermes run --session ID "/model X"`` then a turn).
            await self._state.append_rows([])
        elif self._state.rows:
            made = await self._state.append_rows(
                [
                    NewRow(
                        role="system",
                        content=f"The conversation continues with model {resolved.ref}.",
                        display_kind="model_switch",
                        model=resolved.ref,
                    )
                ]
            )
            marker_id = made[0].id
        self._session.mark_changed("model")
        return ModelSwitch(resolved.ref, resolved.provider, resolved.model, scope, previous, marker_id)

    async def set_cwd(self, path: Path) -> None:
        """Set the workspace: an absolute, existing directory, stored resolved."""
        p = Path(path)
        if not p.is_absolute():
            raise InvalidValue("cwd", message=f"cwd must be an absolute path: {path}")
        resolved = p.resolve()
        if not resolved.is_dir():
            raise InvalidValue("cwd", message=f"cwd is not an existing directory: {path}")
        await self._state.update_record(cwd=str(resolved))
        self._session.mark_changed("cwd")

    async def set_profile(self, profile: str) -> None:
        """Set the approval profile (docs/reference/core.md#approval-profiles)."""
        if profile not in PROFILES:
            raise InvalidValue("profile", PROFILES)
        await self._state.update_record(profile=profile)
        self._session.mark_changed("profile")

    async def set_title(self, title: str) -> TitleResult:
        """Set an explicit title; pending until the first row exists."""
        from hermes_core.titles import clean_title

        cleaned = clean_title(title)
        if self._state.persisted:
            await self._state.update_record(title=cleaned, title_origin="explicit")
        else:
            self._state.set_pending_title(cleaned, "explicit")
        from hermes_core.events import TitleChanged

        self._session.emit(TitleChanged(session_id=self._session.id, title=cleaned, origin="explicit"))
        return TitleResult(cleaned, pending=not self._state.persisted)

    async def set_reasoning_effort(self, effort: str | None) -> None:
        """Set the reasoning effort (``none`` … ``xhigh``) or clear it."""
        allowed = ("none", "minimal", "low", "medium", "high", "xhigh")
        if effort is not None and effort not in allowed:
            raise InvalidValue("reasoning_effort", allowed)
        await self._state.update_record(reasoning_effort=effort)
        self._session.mark_changed("reasoning_effort")

    async def set_system_overlay(self, text: str | None) -> None:
        """Layer extra instructions on the core system prompt (stored with the session)."""
        await self._state.update_record(system_overlay=text)

    async def stop_processes(self, *, grace: float = 3.0) -> int:
        """Stop the background processes the ``terminal`` tool started for this session.

        Each process group gets SIGTERM, then SIGKILL after ``grace`` seconds; running turns are
        left alone. Returns how many were still running.
        """
        from hermes_core.core_tools import kill_group

        alive = [p for p in self._processes if p.poll() is None]
        self._processes.clear()
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(loop.run_in_executor(self._session.kernel.executor, kill_group, p, grace) for p in alive)
        )
        return len(alive)

    def set_tool_filter(self, hidden: frozenset[str]) -> None:
        """Hide these tools from the model for the following turns."""
        self._hidden_tools = frozenset(hidden)

    @property
    def hidden_tools(self) -> frozenset[str]:
        """The tool names ``set_tool_filter`` hides from the model."""
        return self._hidden_tools

    def track_process(self, proc: Any) -> None:
        """Note a process a tool started, so interrupt and close can kill its group."""
        self._processes.append(proc)

    def untrack_process(self, proc: Any) -> None:
        """Forget a process that ended."""
        if proc in self._processes:
            self._processes.remove(proc)

    def kill_processes(self) -> None:
        """Kill every tracked process group at once (closing the session)."""
        from hermes_core.core_tools import kill_groups

        kill_groups(self._session.kernel.executor, self._processes)
