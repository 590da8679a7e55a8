"""Decide what the mock provider answers to one request (docs/mock-provider.md).

Everything here is a pure function of the :class:`~hermes_core.ChatRequest`: the same request always
gets the same plan, which :mod:`hermes_mock.provider` then streams.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hermes_core import (
    SUMMARY_INSTRUCTION,
    TITLE_INSTRUCTION,
    ChatMessage,
    ChatRequest,
    FinishReason,
    ProviderError,
    ToolCallRequest,
)
from hermes_mock.directives import Directives, parse, strip_directives

MODELS: tuple[str, ...] = ("echo", "script", "alt", "history")
CONTEXT_WINDOW = 32_768
# how the core appends steer text to a tool result (docs/reference/core.md#steer)
STEER_MARKER = "\n\n[User guidance] "
# how the core appends background delegation results to a tool result, and the system-prompt
# header it gives them when a new turn starts (docs/delegation.md#result)
BACKGROUND_MARKER = "\n\n[Background results] "
BACKGROUND_HEADER = "\n\nBackground delegations that finished since your last turn:\n"

# The finish reasons of hermes_core's FinishChunk, spelled out here to use public names only.

_DELTA = re.compile(r"\s*\S+|\s+\Z")
# One message of the conversation the core renders into its title and summary requests.
_RENDERED = re.compile(r'<message role="(\w+)"[^>\n]*>\n(.*?)\n</message>', re.DOTALL)
_COUNTED_ROLES = frozenset({"user", "assistant", "tool"})
_TITLE_WORDS = 6
_SUMMARY_WORDS = 3


@dataclass(frozen=True, slots=True)
class Plan:
    """What one mock call streams, in order: reasoning, tool calls, text, usage, finish.

    :param deltas: the reply's text deltas.
    :param reasoning: the reasoning deltas, streamed before anything else.
    :param calls: tool calls to request instead of answering.
    :param finish: the finish reason.
    :param delay_ms: the sleep before each text or reasoning delta.
    :param input_words: the usage's input count.
    """

    deltas: list[str]
    reasoning: list[str]
    calls: tuple[ToolCallRequest, ...]
    finish: FinishReason
    delay_ms: int
    input_words: int


def split_deltas(text: str) -> list[str]:
    """Cut a reply into deltas, attaching each whitespace run to the word after it.

    :param text: the full reply.
    :returns: deltas whose concatenation is exactly ``text`` (none for an empty text).
    """
    # One C-level pass: each word with the whitespace run before it, plus a trailing run alone.
    return _DELTA.findall(text)


def tokens_text(count: int) -> str:
    """Return the reply of ``[[tokens N]]``: ``t0 t1 … t(N-1)``.

    :param count: N.
    :returns: the reply text.
    """
    return " ".join(map("t{}".format, range(count)))


def count_input_words(messages: Sequence[ChatMessage]) -> int:
    """Count the whitespace-separated words of the user, assistant and tool messages.

    :param messages: the request's history (the system prompt and tool schemas are not in it).
    :returns: the usage's input count.
    """
    return sum(len(m.content.split()) for m in messages if m.role in _COUNTED_ROLES)


def _latest_user_index(messages: Sequence[ChatMessage]) -> int:
    """Return the index of the latest user message, or -1 when there is none.

    :param messages: the request's history.
    :returns: the index.
    """
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index
    return -1


def _user_texts(messages: Sequence[ChatMessage]) -> list[str]:
    """Return the text of every user message with its directives removed, in order.

    :param messages: the request's history.
    :returns: the texts.
    """
    return [strip_directives(m.content) for m in messages if m.role == "user"]


def _first_line(text: str) -> str:
    """Return the first line of a tool result.

    :param text: the result text.
    :returns: everything before the first newline.
    """
    return text.split("\n", 1)[0].rstrip("\r")


@dataclass(frozen=True, slots=True)
class _Rounds:
    """The tool rounds run since the latest user message, and the results of the last one."""

    count: int
    last_results: list[str]


def _rounds_since(messages: Sequence[ChatMessage], user_index: int) -> _Rounds:
    """Count the tool rounds after the latest user message and collect the last round's results.

    :param messages: the request's history.
    :param user_index: the index of the latest user message (-1 when there is none).
    :returns: the round count and the texts of the tool messages answering the last round.
    """
    count = 0
    last_round = -1
    for index in range(user_index + 1, len(messages)):
        message = messages[index]
        if message.role == "assistant" and message.tool_calls:
            count += 1
            last_round = index
    results: list[str] = []
    if last_round >= 0:
        for message in messages[last_round + 1 :]:
            if message.role != "tool":
                break
            results.append(message.content)
    return _Rounds(count, results)


def done_reply(results: list[str]) -> str:
    """Return the reply after tool results, with the steer guidance delivered with them.

    :param results: the texts of the last round's tool messages, in order.
    :returns: ``Done: <first lines>`` plus `` / Steer: <guidance>`` when guidance was delivered
        and `` / Background: <results>`` when background delegation results were.
    """
    steer: str | None = None
    background: str | None = None
    lines = list(results)
    if lines:
        cut = lines[-1].find(BACKGROUND_MARKER)
        if cut >= 0:
            background = lines[-1][cut + len(BACKGROUND_MARKER) :]
            lines[-1] = lines[-1][:cut]
        # The core appends guidance only to the batch's last result message (docs/reference/core.md#steer).
        cut = lines[-1].find(STEER_MARKER)
        if cut >= 0:
            steer = lines[-1][cut + len(STEER_MARKER) :]
            lines[-1] = lines[-1][:cut]
    reply = "Done: " + "; ".join(_first_line(text) for text in lines)
    if steer is not None:
        reply += " / Steer: " + steer
    if background is not None:
        reply += " / Background: " + background.replace("\n", " | ")
    return reply


def background_reply(system: str | None) -> str:
    """Return `` / Background: <results>`` when a turn's system prompt carries background
    delegation results, else an empty string.

    :param system: the request's system prompt.
    :returns: the suffix the mock adds to its reply.
    """
    if not system:
        return ""
    cut = system.find(BACKGROUND_HEADER)
    if cut < 0:
        return ""
    return " / Background: " + system[cut + len(BACKGROUND_HEADER) :].replace("\n", " | ")


def _rendered(messages: Sequence[ChatMessage]) -> list[tuple[str, str]]:
    """Return the (role, text) of each message of the conversation the request carries as text.

    :param messages: the request's history: the core's title and summary requests carry the
        conversation rendered as ``<message role="…">`` blocks inside one user message.
    :returns: the messages in order.
    """
    return [
        (match.group(1), match.group(2))
        for m in messages
        if m.role == "user"
        for match in _RENDERED.finditer(m.content)
    ]


def derived_title(conversation: Sequence[tuple[str, str]]) -> str:
    """Return the first six words of the conversation's first user message, directives removed.

    :param conversation: the rendered messages.
    :returns: the title (empty without a user message).
    """
    for role, text in conversation:
        if role == "user":
            return " ".join(strip_directives(text).split()[:_TITLE_WORDS])
    return ""


def _title_reply(messages: Sequence[ChatMessage]) -> str:
    """Answer a title request: the latest ``[[title TEXT]]`` of the conversation, else the derived title.

    :param messages: the request's history.
    :returns: the title text.
    """
    conversation = _rendered(messages)
    for role, text in reversed(conversation):
        if role == "user":
            title = parse(text).title
            if title is not None:
                return title
    return derived_title(conversation)


def _summary_reply(messages: Sequence[ChatMessage]) -> str:
    """Answer a summary request.

    :param messages: the request's history.
    :returns: ``Summary of N messages: <first three words of each user turn, joined with ", ">``,
        N counting the messages of the conversation sent; user turns without any word are left out.
    """
    conversation = _rendered(messages)
    heads = [
        " ".join(words[:_SUMMARY_WORDS])
        for words in (strip_directives(t).split() for role, t in conversation if role == "user")
        if words
    ]
    return f"Summary of {len(conversation)} messages: " + ", ".join(heads)


def _model_reply(model: str, messages: Sequence[ChatMessage], latest: Directives, done: str | None) -> str:
    """Return the reply of one model for a turn.

    ``[[tokens N]]`` and the ``Done: …`` reply replace the model's own text; ``mock:alt`` is
    ``alt: `` plus whatever ``mock:echo`` replies, so it keeps its prefix on both.

    :param model: one of :data:`MODELS`.
    :param messages: the request's history.
    :param latest: the directives of the latest user message.
    :param done: the reply after tool results, when tool rounds ran since the latest user message.
    :returns: the reply text.
    """
    if done is not None:
        base = done
    elif latest.tokens is not None:
        base = tokens_text(latest.tokens)
    elif model == "history":
        return "Turns: " + " | ".join(_user_texts(messages))
    else:
        base = "You said: " + latest.text
    return "alt: " + base if model == "alt" else base


def _call_ids(messages: Sequence[ChatMessage], round_number: int, size: int) -> list[str]:
    """Mint provider ids for one batch, unique across the history the request carries.

    :param messages: the request's history.
    :param round_number: the 1-based round within the turn.
    :param size: the number of calls in the batch.
    :returns: ``mock_<user turn>_<round>_<index>`` for each call.
    """
    turn = sum(1 for m in messages if m.role == "user")
    return [f"mock_{turn}_{round_number}_{i}" for i in range(size)]


def plan_reply(request: ChatRequest) -> Plan:
    """Decide everything the mock streams for one request.

    :param request: the model call.
    :returns: the plan.
    :raises ProviderError: ``upstream`` for an unknown model or an ``[[error MESSAGE]]``.
    """
    if request.model not in MODELS:
        raise ProviderError(
            "upstream",
            f"unknown mock model {request.model!r} (known: {', '.join(MODELS)})",
            retryable=False,
        )
    messages = request.messages
    input_words = count_input_words(messages)
    # The core's own requests are recognised from their instruction, whatever the purpose says.
    if request.system == TITLE_INSTRUCTION:
        return Plan(split_deltas(_title_reply(messages)), [], (), "stop", 0, input_words)
    if request.system == SUMMARY_INSTRUCTION:
        return Plan(split_deltas(_summary_reply(messages)), [], (), "stop", 0, input_words)

    user_index = _latest_user_index(messages)
    latest = parse(messages[user_index].content) if user_index >= 0 else Directives(text="")
    if latest.error is not None:
        raise ProviderError("upstream", latest.error, retryable=False)
    reasoning = split_deltas(latest.reason) if latest.reason is not None else []
    delay_ms = latest.delay_ms or 0
    rounds = _rounds_since(messages, user_index)

    # One-shot calls are tool-less: their tool directives are only removed from the text.
    if request.purpose == "turn" and latest.calls and rounds.count < (latest.rounds or 1):
        ids = _call_ids(messages, rounds.count + 1, len(latest.calls))
        calls = tuple(
            ToolCallRequest(id=call_id, name=call.name, arguments=call.arguments)
            for call_id, call in zip(ids, latest.calls, strict=True)
        )
        return Plan([], reasoning, calls, "tool_calls", delay_ms, input_words)

    done = done_reply(rounds.last_results) if rounds.count else None
    reply = _model_reply(request.model, messages, latest, done)
    if request.purpose == "turn":
        reply += background_reply(request.system)
    finish: FinishReason = "stop"
    if latest.finish == "length":
        finish = "length"
    elif latest.finish == "refusal":
        finish = "refusal"
    return Plan(split_deltas(reply), reasoning, (), finish, delay_ms, input_words)
