"""``run_agent.AIAgent``: the agent in your own Python process, without a subprocess (docs/embedding.md).

A thin, synchronous facade over the kernel (``hermes_core``) for code written against the
``AIAgent`` class other Hermes releases ship: the common constructor arguments and the keys of
:meth:`AIAgent.run_conversation`'s result are the same. Settings come from where ``hermes run``
takes them (``config.toml``, ``.env`` and the environment, see docs/reference/core.md), with the
constructor's arguments on top; the kernel runs on an event loop in a thread of its own, so the
methods can be called from any code, async programs included.

    from run_agent import AIAgent

    agent = AIAgent(model="openai:gpt-4.1-mini", enabled_toolsets=["file"])
    print(agent.chat("What does README.md say?"))

Like a client of the kernel (``hermes_cli``), this module uses only the kernel's public names, the
CLI's settings loader and the launcher's check for upstream's clashing ``hermes-agent``, never a
plugin.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import inspect
import logging
import os
import sys
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core import Kernel, QuestionRequested, Row, Session, TurnCompleted

__all__ = ["AIAgent"]

log = logging.getLogger("hermes.run_agent")
SOURCE = "embed"
OWNER = "run_agent"
#: Names other releases use for groups of tools, and the tools they stand for here.
TOOLSET_ALIASES: Mapping[str, frozenset[str]] = {
    "file": frozenset({"read_file", "write_file", "edit_file", "list_dir", "search"}),
    "todo": frozenset({"todo"}),
    "clarify": frozenset({"clarify"}),
}
APPROVAL_CHOICES = ("once", "session", "always", "deny")
_YES = frozenset({"y", "yes", "true", "approve", "approved", "allow", "ok"})

ApprovalCallback = Callable[..., Any]
ClarifyCallback = Callable[[str, Sequence[str] | None], str]


class AIAgent:
    """One agent: a model, its tools and the conversation of the last call.

    :param model: ``provider:model`` (``openai:gpt-4.1-mini``), a bare name the kernel resolves,
        or ``""`` for the configured default.
    :param provider: the provider ``model`` belongs to when it is not written into ``model``;
        also the one ``api_key`` and ``base_url`` are for.
    :param api_key: the key for that provider (instead of the environment or ``.env``).
    :param base_url: an OpenAI-compatible endpoint; without a provider it sets ``openai``'s.
    :param max_iterations: tool rounds per turn before the turn stops (``agent.max_tool_rounds``).
    :param enabled_toolsets: offer only these tools: toolset names (``terminal``, ``agent``,
        ``delegation``, ``mcp:<server>``, ``core``), tool names, or ``file``, ``todo`` and
        ``clarify``; None offers every tool. ``disabled_toolsets`` hides the same way.
    :param ephemeral_system_prompt: instructions added to the system prompt of every turn.
    :param session_id: the id of the first session (a stored one is continued).
    :param approval_callback: ``callback(command, description) -> str`` for a tool call that needs
        approval: ``once``, ``session``, ``always`` or ``deny`` (``y``/``yes``/True mean ``once``;
        anything else denies). Called on a worker thread; without it such calls are denied.
    :param clarify_callback: ``callback(question, choices) -> str`` for the model's questions to you.
    :param stream_delta_callback: called with each piece of reply text as it arrives.
    :param cwd: the workspace the tools work in (default: the current directory).
    :param approval_profile: ``accept_edits`` (default, as ``hermes run``), ``default`` or
        ``ask_everything`` (docs/reference/core.md#approval-profiles).
    :param settings: kernel settings laid over the files' (``{"storage": {"backend": "memory"}}``).
    :param quiet_mode: accepted for compatibility; this class never prints.
    :param save_trajectories, verbose_logging, tool_delay, skip_context_files, skip_memory,
        platform: accepted for compatibility and ignored.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        provider: str | None = None,
        model: str = "",
        max_iterations: int = 90,
        enabled_toolsets: Sequence[str] | None = None,
        disabled_toolsets: Sequence[str] | None = None,
        quiet_mode: bool = False,
        ephemeral_system_prompt: str | None = None,
        session_id: str | None = None,
        approval_callback: ApprovalCallback | None = None,
        clarify_callback: ClarifyCallback | None = None,
        stream_delta_callback: Callable[[str], Any] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        approval_profile: str = "accept_edits",
        settings: Mapping[str, Any] | None = None,
        save_trajectories: bool = False,
        verbose_logging: bool = False,
        tool_delay: float = 1.0,
        skip_context_files: bool = False,
        skip_memory: bool = False,
        platform: str | None = None,
    ) -> None:
        if provider is None and ":" in model and not model.startswith(("http://", "https://")):
            head = model.split(":", 1)[0]
            provider = head if "/" not in head else None
        if provider is None and (base_url or api_key):
            provider = "openai"
        self.model = model
        self.provider = provider
        self.base_url = base_url
        self.api_key = api_key
        self.max_iterations = max_iterations
        self.enabled_toolsets = list(enabled_toolsets) if enabled_toolsets is not None else None
        self.disabled_toolsets = list(disabled_toolsets or ())
        self.quiet_mode = quiet_mode
        self.ephemeral_system_prompt = ephemeral_system_prompt
        self.session_id = session_id
        self._first_session_id = session_id
        self.approval_callback = approval_callback
        self.clarify_callback = clarify_callback
        self.stream_delta_callback = stream_delta_callback
        self.cwd = Path(cwd) if cwd is not None else Path.cwd()
        self.approval_profile = approval_profile
        self._extra_settings = dict(settings or {})
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._host: Future[None] | None = None
        self._kernel: Kernel | None = None
        self._session: Session | None = None
        self._last_messages: list[dict[str, Any]] | None = None

    # -- the public methods ----------------------------------------------------------------------
    def chat(self, message: str, stream_callback: Callable[[str], Any] | None = None) -> str:
        """Send one message as a new conversation and return the final reply text ("" when none)."""
        result = self.run_conversation(message, stream_callback=stream_callback)
        return str(result["final_response"] or "")

    def run_conversation(
        self,
        user_message: str,
        system_message: str | None = None,
        conversation_history: Sequence[Mapping[str, Any]] | None = None,
        task_id: str | None = None,
        stream_callback: Callable[[str], Any] | None = None,
    ) -> dict[str, Any]:
        """Run one turn after ``conversation_history`` (OpenAI-style messages; None: a new
        conversation) and return ``final_response``, ``messages`` (the history, this turn's
        user, assistant and tool messages added), ``completed``, ``failed``, ``interrupted``,
        ``api_calls``, ``model``, ``provider``, the session's token counts and ``session_id``
        (plus ``error`` when it failed).

        Passing back the ``messages`` of the previous call continues that conversation in its
        session, tool calls included; any other history starts a session seeded with its user,
        assistant and system texts. ``task_id`` is accepted for compatibility.
        """
        with self._lock:
            loop = self._start()
            call = self._turn(user_message, system_message, conversation_history, stream_callback)
            result = asyncio.run_coroutine_threadsafe(call, loop).result()
            self._last_messages = result["messages"]
            return result

    def close(self) -> None:
        """End the sessions and stop the kernel and its thread (also on ``with`` exit)."""
        with self._lock:
            loop, thread, host = self._loop, self._thread, self._host
            if loop is None or thread is None or host is None:
                return
            if self._stop is not None:
                loop.call_soon_threadsafe(self._stop.set)
            with contextlib.suppress(Exception):
                host.result()
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            self._loop = self._thread = self._host = None
            self._kernel = self._session = None

    def __enter__(self) -> AIAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the kernel, on its own loop -------------------------------------------------------------
    def _start(self) -> asyncio.AbstractEventLoop:
        if self._loop is not None:
            return self._loop
        from hermes_launcher import clash_message, find_clash

        # Upstream's hermes-agent ships a run_agent module and a hermes_cli package of its own:
        # beside it, the settings loader imported below may be the other project's.
        clash = find_clash(sys.path)
        if clash is not None:
            raise RuntimeError(clash_message(*clash))
        kernel = self._build_kernel()
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="run_agent", daemon=True)
        thread.start()
        ready: Future[None] = Future()
        self._host = asyncio.run_coroutine_threadsafe(self._serve(kernel, ready), loop)
        try:
            ready.result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            self._host = None
            raise
        self._loop, self._thread, self._kernel = loop, thread, kernel
        # The loop's thread keeps this object alive, so no finalizer would run: end the kernel
        # (sessions written, MCP servers stopped) when the interpreter exits without close().
        atexit.register(_close_at_exit, weakref.ref(self))
        return loop

    async def _serve(self, kernel: Kernel, ready: Future[None]) -> None:
        """Hold the kernel running (entered and left in this one task) until :meth:`close`."""
        self._stop = asyncio.Event()
        try:
            async with kernel.running():
                ready.set_result(None)
                await self._stop.wait()
                if self._session is not None:
                    await self._session.close()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
                return
            raise

    def _build_kernel(self) -> Kernel:
        """Load the plugins and settings as ``hermes run`` does, then apply the arguments."""
        from hermes_cli.entry_points import installed_plugins
        from hermes_cli.selection import select_plugins
        from hermes_cli.store import FileSettingsStore
        from hermes_core import Kernel

        store = FileSettingsStore()
        selection = select_plugins(store.environment(), installed_plugins(), (), (), ())
        kernel = Kernel.create(entry_points=selection.entry_points, strict=selection.strict, store=store)
        store.bind(kernel.registry)
        raw = _merged(store.load(), self._extra_settings)
        agent = raw.setdefault("agent", {})
        agent["max_tool_rounds"] = self.max_iterations
        if self.provider and (self.api_key or self.base_url):
            table = raw.setdefault("providers", {}).setdefault(self.provider, {})
            if self.api_key:
                table["api_key"] = self.api_key
            if self.base_url:
                table["base_url"] = self.base_url
        ref = self._model_ref()
        if ref:
            raw["model"], raw["model_source"] = ref, "flag"
        kernel.configure(raw)
        return kernel

    def _model_ref(self) -> str | None:
        if not self.model:
            return None
        if self.provider and not self.model.startswith(f"{self.provider}:"):
            return f"{self.provider}:{self.model}"
        return self.model

    # -- one turn --------------------------------------------------------------------------------
    async def _turn(
        self,
        message: str,
        system_message: str | None,
        history: Sequence[Mapping[str, Any]] | None,
        stream_callback: Callable[[str], Any] | None,
    ) -> dict[str, Any]:
        from hermes_core import TextDelta, TurnCompleted, run_prompt

        session = await self._session_for(history)
        overlay = system_message if system_message is not None else self.ephemeral_system_prompt
        if (overlay or None) != session.record.system_overlay:
            await session.set_system_overlay(overlay or None)
        # Let tool servers still connecting (MCP) register first, so the filter covers their tools;
        # what this reports is said once per session, here rather than by the turn.
        assert self._kernel is not None
        notes = await self._kernel.tool_sources.settle(session.id)
        session.set_tool_filter(self._hidden_tools(session))
        kinds = {
            k for k, cb in (("approval", self.approval_callback), ("clarify", self.clarify_callback)) if cb
        }
        done: TurnCompleted | None = None
        prompt = run_prompt(
            session, message, owner=OWNER, answer=self._answer if kinds else None, kinds=kinds or {"approval"}
        )
        async for event in prompt:
            if isinstance(event, TextDelta) and event.text:
                for callback in (self.stream_delta_callback, stream_callback):
                    if callback is not None:
                        callback(event.text)
            elif isinstance(event, TurnCompleted):
                done = event
        assert done is not None  # run_prompt ends with the turn's TurnCompleted
        result = self._result(session, done)
        result["warnings"] = [*notes, *result["warnings"]]
        return result

    async def _session_for(self, history: Sequence[Mapping[str, Any]] | None) -> Session:
        """Continue the last conversation when given its messages back, else open a new session."""
        from hermes_core import SeedMessage

        assert self._kernel is not None
        current = self._session
        if current is not None and history is not None and list(history) == self._last_messages:
            return current
        if current is not None:
            await current.close()
            self._session = None
        seed = [SeedMessage(role=m["role"], text=_text(m.get("content"))) for m in _seedable(history or ())]
        # The id given to the constructor names the first session only.
        session_id, self._first_session_id = self._first_session_id, None
        self._session = await self._kernel.open_session(
            session_id,
            source=SOURCE,
            owner=OWNER,
            cwd=self.cwd,
            profile=self.approval_profile,
            model=self._model_ref(),
            seed=seed,
        )
        self.session_id = self._session.id
        return self._session

    def _hidden_tools(self, session: Session) -> frozenset[str]:
        assert self._kernel is not None
        tools = self._kernel.registry.tools_for(session.id)
        known = {t.toolset for t in tools} | {t.name for t in tools} | set(TOOLSET_ALIASES) | {"mcp"}
        for name in [*(self.enabled_toolsets or ()), *self.disabled_toolsets]:
            if name not in known:
                log.warning(
                    "toolset %r is not known here (known: %s); ignored", name, ", ".join(sorted(known))
                )

        def picked(tool: Any, names: Sequence[str]) -> bool:
            return any(
                n in (tool.toolset, tool.name)
                or tool.name in TOOLSET_ALIASES.get(n, ())
                or (n == "mcp" and tool.toolset.startswith("mcp:"))
                for n in names
            )

        hidden = {t.name for t in tools if picked(t, self.disabled_toolsets)}
        if self.enabled_toolsets is not None:
            hidden |= {t.name for t in tools if not picked(t, self.enabled_toolsets)}
        return frozenset(hidden)

    async def _answer(self, question: QuestionRequested) -> str | None:
        """Ask the callbacks on a worker thread (they may block on a person)."""
        loop = asyncio.get_running_loop()
        if question.kind == "approval" and self.approval_callback is not None:
            command = question.command_redacted or question.tool_name or ""
            description = question.description or "; ".join(question.reasons)
            callback = self.approval_callback
            kwargs = {"allow_permanent": question.persistable} if _takes(callback, "allow_permanent") else {}
            verdict = await loop.run_in_executor(None, lambda: callback(command, description, **kwargs))
            return _approval_choice(verdict, question.choices or APPROVAL_CHOICES)
        if question.kind == "clarify" and self.clarify_callback is not None:
            clarify = self.clarify_callback
            text = question.question or ""
            answer = await loop.run_in_executor(None, lambda: clarify(text, question.choices))
            return str(answer)
        return None

    def _result(self, session: Session, done: TurnCompleted) -> dict[str, Any]:
        outcome = done.outcome
        info = session.info()
        usage, turn = done.usage, done.turn_usage
        result: dict[str, Any] = {
            "final_response": done.text or None,
            "last_reasoning": done.reasoning or None,
            "messages": [_message(row) for row in session.rows],
            "api_calls": turn.calls,
            "completed": outcome.status == "complete",
            "failed": outcome.status == "error",
            "partial": outcome.partial,
            "interrupted": outcome.status == "interrupted",
            "turn_exit_reason": outcome.reason,
            "model": info.model,
            "provider": info.provider,
            "base_url": self.base_url,
            "input_tokens": usage.input,
            "output_tokens": usage.output,
            "reasoning_tokens": usage.reasoning,
            "prompt_tokens": usage.input,
            "completion_tokens": usage.output,
            "total_tokens": usage.total or usage.input + usage.output,
            "estimated_cost_usd": usage.cost_usd,
            "session_id": session.id,
            "warnings": list(done.warnings),
        }
        if outcome.status == "error":
            result["error"] = outcome.message or outcome.reason
        return result


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _text(content: Any) -> str:
    """The text of an OpenAI message's ``content``: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content]
        return "\n\n".join(t for t in texts if t)
    return ""


def _seedable(history: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The messages a new session can be seeded with: user, assistant and system texts (tool
    calls and results have no seed form and are left out)."""
    return [
        m
        for m in history
        if m.get("role") in ("user", "assistant", "system") and _text(m.get("content")).strip()
    ]


def _message(row: Row) -> dict[str, Any]:
    """One stored row as an OpenAI chat message."""
    if row.role == "tool":
        return {"role": "tool", "tool_call_id": row.provider_call_id or row.call_id, "content": row.content}
    message: dict[str, Any] = {"role": row.role, "content": row.content}
    if row.role == "assistant":
        if row.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.provider_call_id or call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in row.tool_calls
            ]
            message["content"] = row.content or None
        if row.reasoning:
            message["reasoning"] = row.reasoning
    return message


def _takes(callback: Callable[..., Any], name: str) -> bool:
    try:
        parameters = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _approval_choice(verdict: Any, offered: Sequence[str]) -> str:
    """Turn what an approval callback returned into one of the offered choices (else ``deny``)."""
    if verdict is True:
        return "once"
    text = str(verdict).strip().lower() if isinstance(verdict, str) else ""
    if text in _YES:
        return "once"
    return text if text in offered else "deny"


def _close_at_exit(ref: weakref.ReferenceType[AIAgent]) -> None:
    agent = ref()
    if agent is not None:
        agent.close()
