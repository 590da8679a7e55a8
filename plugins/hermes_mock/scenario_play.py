"""Play a scenario file as the ``mock:scenario:PATH`` model (docs/reference/scenarios.md).

Which step answers a request is a function of the request: the number of user messages picks the
turn (a child agent's first message picks its ``[[subagents]]`` script by goal), and the number
of tool rounds since the latest user message picks the step. Only scripted failures keep state:
the attempts of one identical request are counted, so ``times`` failures are followed by success
(and the count starts again, so a second run of the scenario fails the same way).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Sequence

from hermes_core import (
    SUMMARY_INSTRUCTION,
    TITLE_INSTRUCTION,
    ChatMessage,
    ChatRequest,
    Chunk,
    FinishChunk,
    ProviderError,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    ToolCallRequest,
    UsageChunk,
    scenarios,
)
from hermes_mock import expect_check
from hermes_mock.replies import count_input_words, plan_reply

_CONTEXT_MARK = "\n\nContext:\n"


def _matches_goal(text: str, goal: str) -> bool:
    return text == goal or text.startswith(goal + _CONTEXT_MARK)


def _steps_for(
    scenario: scenarios.Scenario, messages: Sequence[ChatMessage]
) -> tuple[str, tuple[scenarios.Step, ...]]:
    """Return a key naming the script and the steps that answer this conversation.

    :raises ProviderError: the scenario has no turn for it.
    """
    users = [m for m in messages if m.role == "user"]
    if users:
        for index, sub in enumerate(scenario.subagents):
            if _matches_goal(users[0].content, sub.goal):
                return f"subagent {index + 1}", sub.steps
    count = len(users)
    if not 1 <= count <= len(scenario.turns):
        raise ProviderError(
            "upstream",
            f"scenario {scenario.path}: no turn {count} (the scenario has {len(scenario.turns)})",
            retryable=False,
        )
    return f"turn {count}", scenario.turns[count - 1].steps


def _round(messages: Sequence[ChatMessage]) -> int:
    """Count the tool rounds since the latest user message."""
    rounds = 0
    for message in reversed(messages):
        if message.role == "user":
            break
        if message.role == "assistant" and message.tool_calls:
            rounds += 1
    return rounds


def _fingerprint(request: ChatRequest) -> str:
    digest = hashlib.sha256()
    for message in request.messages:
        digest.update(f"{message.role}\0{message.content}\0".encode())
    return digest.hexdigest()


class ScenarioPlayer:
    """Streams the steps of one scenario; one per provider and scenario path."""

    def __init__(self, scenario: scenarios.Scenario, time_scale: float = 1.0) -> None:
        self.scenario = scenario
        self.time_scale = time_scale
        self._attempts: dict[tuple[str, int, str], int] = {}

    async def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        """Stream the step that answers ``request``."""
        if request.system == TITLE_INSTRUCTION:
            # The model-written title (docs/reference/scenarios.md#titles-summaries-and-one-shot-calls):
            # without one the call fails, and the derived title stays, so no title arrives late.
            if self.scenario.title is None:
                raise ProviderError(
                    "upstream", f"scenario {self.scenario.path} has no title", retryable=False
                )
            yield TextChunk(self.scenario.title)
            yield UsageChunk(input=count_input_words(request.messages), output=1, reasoning=0)
            yield FinishChunk("stop")
            return
        if request.purpose != "turn" or request.system == SUMMARY_INSTRUCTION:
            # Summaries and one-shot calls are answered the way mock:echo answers them.
            async for chunk in _echo(request):
                yield chunk
            return
        key, steps = _steps_for(self.scenario, request.messages)
        number = _round(request.messages)
        if number >= len(steps):
            raise ProviderError(
                "upstream",
                f"scenario {self.scenario.path}: {key} has no step {number + 1} (it has {len(steps)})",
                retryable=False,
            )
        step = steps[number]
        turn = sum(1 for m in request.messages if m.role == "user")
        if number > 0:
            self._check_expect(key, number, steps[number - 1])
        if step.error is not None:
            self._fail_or_pass(key, number, request, step.error)
        for piece in step.reasoning:
            await self._pause(piece.delay_ms)
            yield ReasoningChunk(piece.text)
        for piece in step.chunks:
            await self._pause(piece.delay_ms)
            yield TextChunk(piece.text)
        for index, call in enumerate(step.tool_calls):
            call_id = f"scn_{turn}_{number + 1}_{index}"
            yield ToolCallChunk(ToolCallRequest(id=call_id, name=call.name, arguments=call.arguments))
        if step.usage is not None:
            yield UsageChunk(input=step.usage[0], output=step.usage[1], reasoning=0)
        else:
            yield UsageChunk(input=count_input_words(request.messages), output=len(step.chunks), reasoning=0)
        yield FinishChunk("tool_calls" if step.tool_calls else step.finish)  # type: ignore[arg-type]

    def _check_expect(self, key: str, number: int, previous: scenarios.Step) -> None:
        """Fail the call when the host's answers to the previous step's questions differ from its
        ``expect`` (docs/reference/scenarios.md#expected-questions)."""
        found = expect_check.problem(previous)
        if found is not None:
            raise ProviderError(
                "upstream",
                f"scenario {self.scenario.path}:{previous.line}: {key} step {number}: {found}",
                retryable=False,
            )

    def _fail_or_pass(self, key: str, number: int, request: ChatRequest, error: scenarios.StepError) -> None:
        """Raise the scripted error for the first ``times`` attempts of this very request."""
        slot = (key, number, _fingerprint(request))
        attempt = self._attempts.get(slot, 0)
        # Non-retryable failures fail every time; retryable ones pass on attempt `times`.
        if error.retryable:
            self._attempts[slot] = 0 if attempt >= error.times else attempt + 1
            if attempt >= error.times:
                return
        raise ProviderError(
            error.kind,  # type: ignore[arg-type]
            error.message,
            retryable=error.retryable,
            retry_after=error.retry_after_s,
        )

    async def _pause(self, delay_ms: int) -> None:
        if delay_ms and self.time_scale > 0:
            await asyncio.sleep(delay_ms * self.time_scale / 1000)


async def _echo(request: ChatRequest) -> AsyncIterator[Chunk]:
    plan = plan_reply(
        ChatRequest(
            model="echo",
            messages=request.messages,
            tools=request.tools,
            system=request.system,
            purpose=request.purpose,
        )
    )
    for text in plan.deltas:
        yield TextChunk(text)
    yield UsageChunk(input=plan.input_words, output=len(plan.deltas), reasoning=0)
    yield FinishChunk(plan.finish)
