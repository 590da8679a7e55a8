"""The Responses stream events (docs/reference/api-server.md#responses-stream): their types, and
:class:`StreamEvents`, which numbers and builds them for one response.

The events are ``TypedDict`` s: :class:`hermes_api_server.response_builder.ResponseBuilder`
builds every frame with them at no run-time cost, and ``hermes schema export`` turns the same
types into closed JSON Schemas (:data:`RESPONSE_EVENT_TYPES`). The output items and the response
object they carry are the ones :mod:`hermes_api_server.response_models` describes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on 3.12+

from hermes_api_server.chunk_models import body_ref

#: an output item and a response object, built as dicts by the response builder; their schemas
#: are the body models' (``OutputItem``, ``ResponseObject`` in ``response_models``)
ItemDict = Annotated[dict[str, Any], body_ref("OutputItem")]
ResponseDict = Annotated[dict[str, Any], body_ref("ResponseObject")]

CLOSED = ConfigDict(extra="forbid")
Seq = Annotated[int, Field(ge=0)]
Lifecycle = Literal[
    "response.created", "response.in_progress", "response.completed", "response.failed", "response.incomplete"
]


@with_config(CLOSED)
class ResponseLifecycleEvent(TypedDict):
    """``response.created``, ``.in_progress``, ``.completed``, ``.failed`` and ``.incomplete``
    (a cancelled response's end too): the whole object as it stands."""

    type: Lifecycle
    sequence_number: Seq
    response: ResponseDict


@with_config(CLOSED)
class ResponseOutputItemEvent(TypedDict):
    """``response.output_item.added`` and ``.done``: an output item opened or finished (a
    message is added with no content yet)."""

    type: Literal["response.output_item.added", "response.output_item.done"]
    sequence_number: Seq
    output_index: int
    item: ItemDict


@with_config(CLOSED)
class OutputTextPart(TypedDict):
    """The text part of a message item."""

    type: Literal["output_text"]
    text: str
    annotations: list[Any]


@with_config(CLOSED)
class ResponseContentPartEvent(TypedDict):
    """``response.content_part.added`` (empty text) and ``.done`` (the whole text)."""

    type: Literal["response.content_part.added", "response.content_part.done"]
    sequence_number: Seq
    item_id: str
    output_index: int
    content_index: int
    part: OutputTextPart


@with_config(CLOSED)
class ResponseOutputTextDelta(TypedDict):
    """``response.output_text.delta``: more of a message's text."""

    type: Literal["response.output_text.delta"]
    sequence_number: Seq
    item_id: str
    output_index: int
    content_index: int
    delta: str
    logprobs: list[Any]


@with_config(CLOSED)
class ResponseOutputTextDone(TypedDict):
    """``response.output_text.done``: a message's whole text."""

    type: Literal["response.output_text.done"]
    sequence_number: Seq
    item_id: str
    output_index: int
    content_index: int
    text: str
    logprobs: list[Any]


@with_config(CLOSED)
class ResponseReasoningTextDelta(TypedDict):
    """``response.reasoning_text.delta``: more reasoning (only with ``show_reasoning``)."""

    type: Literal["response.reasoning_text.delta"]
    sequence_number: Seq
    item_id: str
    output_index: int
    content_index: int
    delta: str


@with_config(CLOSED)
class ResponseReasoningTextDone(TypedDict):
    """``response.reasoning_text.done``: the whole reasoning of one item."""

    type: Literal["response.reasoning_text.done"]
    sequence_number: Seq
    item_id: str
    output_index: int
    content_index: int
    text: str


@with_config(CLOSED)
class ResponseFunctionCallArgumentsDone(TypedDict):
    """``response.function_call_arguments.done``: a tool call's name and whole arguments."""

    type: Literal["response.function_call_arguments.done"]
    sequence_number: Seq
    item_id: str
    output_index: int
    name: str
    arguments: str


StreamEvent = (
    ResponseLifecycleEvent
    | ResponseOutputItemEvent
    | ResponseContentPartEvent
    | ResponseOutputTextDelta
    | ResponseOutputTextDone
    | ResponseReasoningTextDelta
    | ResponseReasoningTextDone
    | ResponseFunctionCallArgumentsDone
)

#: stream event name -> its type (the export's ``x-hermes-sse-events`` of the Responses routes)
RESPONSE_EVENT_TYPES: dict[str, Any] = {
    "response.created": ResponseLifecycleEvent,
    "response.in_progress": ResponseLifecycleEvent,
    "response.output_item.added": ResponseOutputItemEvent,
    "response.function_call_arguments.done": ResponseFunctionCallArgumentsDone,
    "response.content_part.added": ResponseContentPartEvent,
    "response.output_text.delta": ResponseOutputTextDelta,
    "response.reasoning_text.delta": ResponseReasoningTextDelta,
    "response.reasoning_text.done": ResponseReasoningTextDone,
    "response.output_text.done": ResponseOutputTextDone,
    "response.content_part.done": ResponseContentPartEvent,
    "response.output_item.done": ResponseOutputItemEvent,
    "response.completed": ResponseLifecycleEvent,
    "response.failed": ResponseLifecycleEvent,
    "response.incomplete": ResponseLifecycleEvent,
}


def terminal_kind(status: Any) -> Lifecycle:
    """Return the terminal event of a response in ``status`` (a cancelled one ends ``incomplete``)."""
    if status == "failed":
        return "response.failed"
    return "response.incomplete" if status in ("incomplete", "cancelled") else "response.completed"


def text_part(text: str) -> OutputTextPart:
    """Return the ``output_text`` part holding ``text``."""
    return OutputTextPart(type="output_text", text=text, annotations=[])


class StreamEvents:
    """Numbers and builds one response's stream events (``sequence_number`` from 0)."""

    def __init__(self) -> None:
        self.seq = 0

    def _next(self) -> int:
        seq = self.seq
        self.seq += 1
        return seq

    def lifecycle(self, kind: Lifecycle, response: dict[str, Any]) -> ResponseLifecycleEvent:
        return ResponseLifecycleEvent(type=kind, sequence_number=self._next(), response=response)

    def item(
        self, kind: Literal["added", "done"], index: int, item: dict[str, Any]
    ) -> ResponseOutputItemEvent:
        return ResponseOutputItemEvent(
            type="response.output_item.added" if kind == "added" else "response.output_item.done",
            sequence_number=self._next(),
            output_index=index,
            item=dict(item),
        )

    def part(
        self, kind: Literal["added", "done"], item_id: str, index: int, text: str
    ) -> ResponseContentPartEvent:
        return ResponseContentPartEvent(
            type="response.content_part.added" if kind == "added" else "response.content_part.done",
            sequence_number=self._next(),
            item_id=item_id,
            output_index=index,
            content_index=0,
            part=text_part(text),
        )

    def text_delta(self, item_id: str, index: int, delta: str) -> ResponseOutputTextDelta:
        # The one event per reply chunk: a checked literal, no constructor call.
        seq = self.seq
        self.seq = seq + 1
        event: ResponseOutputTextDelta = {
            "type": "response.output_text.delta",
            "sequence_number": seq,
            "item_id": item_id,
            "output_index": index,
            "content_index": 0,
            "delta": delta,
            "logprobs": [],
        }
        return event

    def text_done(self, item_id: str, index: int, text: str) -> ResponseOutputTextDone:
        return ResponseOutputTextDone(
            type="response.output_text.done",
            sequence_number=self._next(),
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=text,
            logprobs=[],
        )

    def reasoning_delta(self, item_id: str, index: int, delta: str) -> ResponseReasoningTextDelta:
        return ResponseReasoningTextDelta(
            type="response.reasoning_text.delta",
            sequence_number=self._next(),
            item_id=item_id,
            output_index=index,
            content_index=0,
            delta=delta,
        )

    def reasoning_done(self, item_id: str, index: int, text: str) -> ResponseReasoningTextDone:
        return ResponseReasoningTextDone(
            type="response.reasoning_text.done",
            sequence_number=self._next(),
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=text,
        )

    def arguments_done(
        self, item_id: str, index: int, name: str, arguments: str
    ) -> ResponseFunctionCallArgumentsDone:
        return ResponseFunctionCallArgumentsDone(
            type="response.function_call_arguments.done",
            sequence_number=self._next(),
            item_id=item_id,
            output_index=index,
            name=name,
            arguments=arguments,
        )
