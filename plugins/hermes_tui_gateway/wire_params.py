"""The TUI gateway's typed method params: the pydantic models the handlers parse requests with.

A handler calls :func:`parse` first thing; the model's fields are the params the method reads,
and ``hermes schema export`` lists the same fields as the method's OpenRPC ``params``
(:mod:`hermes_tui_gateway.schema_doc`). The TUI reading rules hold for every model
(docs/reference/tui-gateway.md#message-shapes): unknown keys are ignored, ``null`` counts as
absent, types are strict (``true`` is no integer, ``"1"`` no boolean), and a param of the wrong
type is the -32602 ``{param, expected}`` the hand-written readers answered before.

Checks of meaning (an empty title, an unknown choice, a session that is not live) stay in the
handlers, with their own codes; a param such a check makes mandatory is named in
``REQUIRED`` so the schema says so.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, model_validator

from hermes_tui_gateway.params import bad

_M = TypeVar("_M", bound="ParamsModel")

#: JSON type names of the -32602 ``expected`` field, by pydantic error type.
_EXPECTED = {
    "string_type": "string",
    "int_type": "integer",
    "bool_type": "boolean",
    "float_type": "number",
    "list_type": "list",
    "dict_type": "object",
}
_FIELD_TYPES = {str: "string", int: "integer", bool: "boolean", float: "number"}


class ParamsModel(BaseModel):
    """The params of one method (the TUI reading rules above)."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, defer_build=True)

    #: params that are optional to the parser but mandatory to the method (its own error code).
    REQUIRED: ClassVar[tuple[str, ...]] = ()
    #: the -32602 ``expected`` text of a param, where the JSON type name alone would not do.
    EXPECTED: ClassVar[dict[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data


#: Params a handler checks itself, with a code of its own (the rewind fields answer 4004, not
#: -32602), pass the parser unchecked; ``WithJsonSchema`` says what the handler accepts.
_ROW_REF_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^\\s*[0-9]+\\s*$"}]
}
RowRef = Annotated[Any, WithJsonSchema(_ROW_REF_SCHEMA)]
RowRefs = Annotated[Any, WithJsonSchema({"type": "array", "items": _ROW_REF_SCHEMA})]
LooseStr = Annotated[Any, WithJsonSchema({"type": "string"})]
LooseBool = Annotated[Any, WithJsonSchema({"type": "boolean"})]


class SessionParams(ParamsModel):
    """Params of a method that names a session (``session_id``; empty when missing)."""

    session_id: str = ""


def parse(model: type[_M], params: Any) -> _M:
    """Parse a request's params with ``model``; raise the -32602 of the first bad param.

    :param model: the method's params model.
    :param params: the request's ``params`` (an object; the peer refuses anything else).
    :returns: the parsed params.
    :raises hermes_core.rpc.RpcError: -32602 with ``data: {param, expected}``.
    """
    try:
        return model.model_validate(params if isinstance(params, dict) else {})
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else ""
        raise bad(name, _expected(model, name, first["type"])) from None


def _expected(model: type[ParamsModel], name: str, error_type: str) -> str:
    if name in model.EXPECTED:
        return model.EXPECTED[name]
    if error_type in _EXPECTED:
        return _EXPECTED[error_type]
    field = model.model_fields.get(name)
    annotation = field.annotation if field is not None else None
    return _FIELD_TYPES.get(annotation, "a valid value") if isinstance(annotation, type) else "a valid value"


class NoParams(ParamsModel):
    """A method that reads no params (``setup.status``)."""


class WorkspaceParams(SessionParams):
    """A folder to work in: ``cwd``, else the session's folder."""

    EXPECTED: ClassVar[dict[str, str]] = {"cwd": "a folder path (no NUL character)"}

    cwd: str | None = None


# -- session lifecycle (docs/reference/tui-gateway.md#session-lifecycle) --------------------------
class SeedMessageParam(BaseModel):
    """One message of ``session.create``'s ``messages`` (``content`` or ``text``)."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, defer_build=True)

    role: Literal["user", "assistant", "system"]
    content: str | None = None
    text: str | None = None

    @model_validator(mode="after")
    def _has_text(self) -> SeedMessageParam:
        if self.content is None and self.text is None:
            raise ValueError("content or text is required")
        return self


class SessionCreateParams(ParamsModel):
    """``session.create``."""

    EXPECTED: ClassVar[dict[str, str]] = {"messages": "list of {role, content|text}"}

    cols: int = 80
    cwd: str | None = None
    title: str | None = None
    model: str | None = None
    provider: str | None = None
    reasoning_effort: str | None = None
    parent_session_id: str | None = None
    close_on_disconnect: bool = False
    messages: list[SeedMessageParam] = []


class SessionResumeParams(ParamsModel):
    """``session.resume``: a live or stored session id (4006 when missing)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("session_id",)

    session_id: str = ""
    cols: int | None = None
    omit_messages: bool = False
    close_on_disconnect: bool = False


class SessionListParams(ParamsModel):
    """``session.list``."""

    limit: int = 200
    title: str | None = None
    cwd: str | None = None


class SnapshotParams(SessionParams):
    """``session.activate``."""

    omit_messages: bool = False


class SessionHistoryParams(SessionParams):
    """``session.history``."""

    include_archived: bool = False


class SessionBranchParams(SessionParams):
    """``session.branch``: ``count`` and ``up_to_row_id`` are exclusive."""

    name: str | None = None
    count: int | None = None
    up_to_row_id: int | None = None


class SessionTitleParams(SessionParams):
    """``session.title``: reads without ``title``, sets with it."""

    title: str | None = None


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


class ClarifyRespondParams(ParamsModel):
    """``clarify.respond``."""

    request_id: str
    answer: str


class SudoRespondParams(ParamsModel):
    """``sudo.respond``: the password goes to the waiting tool only."""

    request_id: str
    password: str


class SecretRespondParams(ParamsModel):
    """``secret.respond``: a value with a newline is refused (4002)."""

    request_id: str
    value: str


class ApprovalRespondParams(SessionParams):
    """``approval.respond``: by id, else the oldest open approval, or all of them."""

    choice: str = "deny"
    request_id: str | None = None
    all: bool = False
