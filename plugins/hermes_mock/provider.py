"""The mock provider object: streams the deterministic replies of docs/mock-provider.md with no network."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from hermes_core import (
    ChatRequest,
    Chunk,
    FinishChunk,
    ModelInfo,
    ProviderBase,
    ProviderError,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from hermes_mock.replies import CONTEXT_WINDOW, MODELS, plan_reply

if TYPE_CHECKING:  # imported by the first scenario:/replay: model, off every start-up path
    from hermes_mock.replay import ReplayPlayer
    from hermes_mock.scenario_play import ScenarioPlayer

# Without a delay the deltas stream back to back; every this many the stream yields to the event
# loop so that an interrupt can cancel even a 100,000-token reply promptly.
_YIELD_EVERY = 4096


class MockProvider(ProviderBase):
    """Deterministic offline provider; implements :class:`hermes_core.Provider`.

    Its four models (``echo``, ``script``, ``alt``, ``history``) are the same offline and probed.
    """

    models = tuple(ModelInfo(id=model, context_window=CONTEXT_WINDOW, vision=False) for model in MODELS)

    def __init__(self, name: str = "mock", time_scale: float = 1.0) -> None:
        """Create the provider.

        :param name: the provider name it was registered under.
        :param time_scale: multiplies the pauses of scenarios and replays (0 streams at once).
        """
        self.name = name
        self.time_scale = time_scale
        self._players: dict[str, ScenarioPlayer | ReplayPlayer] = {}

    def _player(self, model: str) -> ScenarioPlayer | ReplayPlayer | None:
        """Return the player of a ``scenario:PATH`` or ``replay:DIR`` model, or None for the others.

        :raises ProviderError: the scenario or recording cannot be read (not retryable).
        """
        kind, sep, where = model.partition(":")
        if not sep or kind not in ("scenario", "replay"):
            return None
        player = self._players.get(model)
        if player is None:
            from hermes_core import scenarios
            from hermes_mock.replay import ReplayPlayer
            from hermes_mock.scenario_play import ScenarioPlayer

            try:
                if kind == "replay":
                    player = ReplayPlayer(where, scenarios.read_recording(where), self.time_scale)
                else:
                    loaded = scenarios.load_scenario(where)
                    if loaded.recording is not None:
                        calls = scenarios.read_recording(loaded.recording)
                        player = ReplayPlayer(loaded.recording, calls, self.time_scale)
                    else:
                        player = ScenarioPlayer(loaded, self.time_scale)
            except (scenarios.ScenarioError, ValueError, OSError) as exc:
                raise ProviderError("upstream", str(exc), retryable=False) from None
            self._players[model] = player
        return player

    async def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        """Stream the reply to one request.

        :param request: the model call.
        :returns: reasoning deltas, then tool calls or text deltas, then usage and the finish.
        :raises ProviderError: ``upstream`` (not retryable) for an unknown model or an
            ``[[error MESSAGE]]`` directive, before any chunk.
        """
        player = self._player(request.model)
        if player is not None:
            async for chunk in player.stream(request):
                yield chunk
            return
        plan = plan_reply(request)
        delay = plan.delay_ms / 1000
        for text in plan.reasoning:
            if delay:
                await asyncio.sleep(delay)
            yield ReasoningChunk(text)
        for call in plan.calls:
            yield ToolCallChunk(call)
        if delay:
            for text in plan.deltas:
                await asyncio.sleep(delay)
                yield TextChunk(text)
        else:
            for index, text in enumerate(plan.deltas, 1):
                yield TextChunk(text)
                if not index % _YIELD_EVERY:
                    await asyncio.sleep(0)
        yield UsageChunk(input=plan.input_words, output=len(plan.deltas), reasoning=0)
        yield FinishChunk(plan.finish)
