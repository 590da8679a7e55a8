"""The TUI gateway's typed params of ``prompt.submit``, ``session.steer`` and ``prompt.background``.

Made on first use: :mod:`hermes_tui_gateway.wire_params` imports this module when a handler first
names one of its models (the reading rules are that module's)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, WithJsonSchema

from hermes_tui_gateway.wire_params import LooseBool, LooseStr, RowRef, RowRefs, SessionParams


# -- prompting and answering (docs/reference/tui-gateway.md#prompting, #answering-questions) -------
class PromptSubmitParams(SessionParams):
    """``prompt.submit``; the rewind fields are checked in the order of
    docs/reference/tui-gateway.md#rewind-edit-and-regenerate (:mod:`hermes_tui_gateway.rewind`)."""

    text: str = ""
    #: ``"hidden"`` keeps the prompt out of the transcript shown to the user
    display_kind: LooseStr = None
    truncate_before_row_id: RowRef = None
    truncate_before_user_ordinal: RowRef = None
    truncate_before_message_id: RowRef = None
    confirm_truncate: LooseBool = None
    confirm_empty_truncate: LooseBool = None
    rebind_survivor_row_ids: RowRefs = None
    #: ``traceparent``: the caller's W3C trace context (docs/observability.md#propagation);
    #: anything else is ignored
    meta: Annotated[
        Any,
        Field(alias="_meta"),
        WithJsonSchema({"type": "object", "properties": {"traceparent": {"type": "string"}}}),
    ] = None


class TextParams(SessionParams):
    """``session.steer`` and ``prompt.background``: the text (4002 / 4012 when empty)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("text",)

    text: str | None = None
