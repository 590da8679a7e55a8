"""The plugin-author test kit (docs/testing-plugins.md): a kernel built from explicit plugins,
a scriptable provider and a scripted question answerer.

``make_kernel(*plugins)`` loads no entry points unless asked, uses in-memory storage and the
given settings, and is strict, so a broken test plugin fails loudly. :class:`FakeProvider`
answers from a function of the request. :class:`ScriptedAnswerer` plays the user: it reads a
turn's events and answers every approval, clarify, sudo or secret question from a script.
:func:`storage_checks` is the storage conformance suite a storage backend runs
(docs/testing-plugins.md#storage-backends).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes_core.errors import ProviderError
from hermes_core.hookspecs import hookimpl
from hermes_core.kernel import Kernel
from hermes_core.providers import ChatRequest, Chunk, FinishChunk, ModelInfo, TextChunk
from hermes_core.records import ProviderSpec
from hermes_core.storage_checks import StorageCheck, StorageTarget, run_storage_checks, storage_checks

__all__ = [
    "FakeProvider",
    "FakeProviderPlugin",
    "MemorySettingsStore",
    "ScriptedAnswerer",
    "StorageCheck",
    "StorageTarget",
    "make_kernel",
    "run_storage_checks",
    "storage_checks",
]

if TYPE_CHECKING:
    from hermes_core.events import AnyEvent, QuestionRequested
    from hermes_core.session.queue import Turn

Answer = str | Callable[["QuestionRequested"], str]

Script = Callable[[ChatRequest], Iterable[Chunk] | AsyncIterator[Chunk]]


class FakeProvider:
    """A provider whose replies come from a function of the request (tests only).

    It is registered as provider ``fake`` and is never selectable as ``mock:*``.
    """

    def __init__(self, script: Script | None = None, models: Sequence[str] = ("model",)) -> None:
        self.script = script or (lambda req: [TextChunk("ok"), FinishChunk("stop")])
        self.models = [ModelInfo(m, context_window=8192) for m in models]
        self.requests: list[ChatRequest] = []

    async def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        self.requests.append(request)
        produced = self.script(request)
        if hasattr(produced, "__aiter__"):
            async for chunk in produced:
                yield chunk
        else:
            for chunk in produced:
                if isinstance(chunk, ProviderError):
                    raise chunk
                yield chunk

    async def list_models(self) -> list[ModelInfo]:
        return list(self.models)

    async def probe(self, timeout: float) -> list[ModelInfo]:
        return list(self.models)

    async def aclose(self) -> None:
        return None


class FakeProviderPlugin:
    """A plugin object contributing one ``FakeProvider`` under a provider name."""

    def __init__(self, provider: FakeProvider, name: str = "fake") -> None:
        self.provider = provider
        self.name = name
        self.hermes_plugin_name = f"{name}-provider"

    @hookimpl
    def hermes_model_providers(self) -> ProviderSpec:
        provider = self.provider
        return ProviderSpec(
            name=self.name,
            summary="test provider",
            factory=lambda settings, **kw: provider,
            requires_key=False,
            open_model_list=False,
        )


def make_kernel(
    *plugins: Any,
    entry_points: bool | Sequence[str] = False,
    settings: Mapping[str, Any] | None = None,
    store: Any = None,
) -> Kernel:
    """Build a strict kernel from explicit plugins, with in-memory storage by default."""
    merged: dict[str, Any] = {"storage": {"backend": "memory"}, "titles": {"refine": False}}
    for key, value in (settings or {}).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return Kernel.create(
        entry_points=entry_points, plugins=plugins, strict=True, settings=merged, store=store
    )


class MemorySettingsStore:
    """A :class:`~hermes_core.settings_store.SettingsStore` kept in memory."""

    config_path = None
    env_path = None

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        self.config: dict[str, Any] = dict(settings or {})
        self.env: dict[str, str] = {}

    def get(self, key: str) -> Any:
        node: Any = self.config
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def set(self, key: str, value: Any) -> None:
        node = self.config
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value

    def set_env(self, name: str, value: str) -> None:
        from hermes_core.errors import InvalidValue

        if "\n" in value:
            raise InvalidValue("value", message="a value cannot contain a newline")
        self.env[name] = value

    def load(self) -> Mapping[str, Any]:
        return dict(self.config)


class ScriptedAnswerer:
    """Answer a turn's questions from a script, as a user at a host would (tests only).

    :param kernel: the kernel running the turn (answers go through :meth:`Kernel.answer`).
    :param answers: question kind (``approval``, ``clarify``, ``sudo``, ``secret``) to the
        answer: a string (``"once"``, ``"session"``, ``"deny"`` for approvals; the text for the
        others) or a function of the :class:`~hermes_core.events.QuestionRequested` event.

    A question whose kind is not in the script gets the empty answer (deny for an approval) and
    makes :meth:`run` raise ``AssertionError`` once the turn is over, so a test never hangs on a
    question nobody expected. Submit the turn with ``answerable=answerer.kinds`` (every kind):
    ``Session.submit`` otherwise declares that nobody can answer, and every question is refused
    at once without reaching the events.

    :ivar kinds: the question kinds the answerer takes (all of them), for ``submit(answerable=)``.
    """

    def __init__(self, kernel: Kernel, answers: Mapping[str, Answer]) -> None:
        from hermes_core.events import ALL_KINDS

        self.kinds: frozenset[str] = ALL_KINDS
        self.kernel = kernel
        self.answers = dict(answers)
        self.asked: list[QuestionRequested] = []
        self.unscripted: list[QuestionRequested] = []

    def answer_for(self, question: QuestionRequested) -> str:
        """Return the scripted answer to one question (the empty answer when unscripted)."""
        from hermes_core.questions import empty_answer

        scripted = self.answers.get(question.kind)
        if scripted is None:
            self.unscripted.append(question)
            return empty_answer(question.kind)
        return scripted if isinstance(scripted, str) else scripted(question)

    async def run(self, turn: Turn) -> list[AnyEvent]:
        """Consume ``turn``'s events to the end, answering each question as it opens.

        :returns: every event of the turn, in order.
        :raises AssertionError: a question of a kind the script does not cover was asked.
        """
        from hermes_core.events import QuestionRequested

        seen: list[AnyEvent] = []
        async for event in turn.events():
            seen.append(event)
            if isinstance(event, QuestionRequested):
                self.asked.append(event)
                self.kernel.answer(event.request_id, self.answer_for(event))
        if self.unscripted:
            kinds = ", ".join(q.kind for q in self.unscripted)
            raise AssertionError(f"unscripted question(s) asked: {kinds}")
        return seen
