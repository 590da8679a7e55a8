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

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, WithJsonSchema, model_validator

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


# -- the other methods' models: made on first use -------------------------------------------------
#: Defining a model costs about half a millisecond, and ``hermes chat`` waits for the gateway's
#: ``session.create`` answer (docs/chat.md#budgets); so only that method's model is made at
#: import, and every other one when a handler first names it (``wp.PromptSubmitParams``): this
#: module's ``__getattr__`` imports the module that defines it.
_LATER = {
    **dict.fromkeys(
        (
            "NoParams",
            "WorkspaceParams",
            "SessionResumeParams",
            "SessionListParams",
            "SnapshotParams",
            "SessionHistoryParams",
            "SessionBranchParams",
            "SessionTitleParams",
        ),
        "hermes_tui_gateway.wire_params_session",
    ),
    **dict.fromkeys(("PromptSubmitParams", "TextParams"), "hermes_tui_gateway.wire_params_prompt"),
    **dict.fromkeys(
        ("ClarifyRespondParams", "SudoRespondParams", "SecretRespondParams", "ApprovalRespondParams"),
        "hermes_tui_gateway.wire_params_answers",
    ),
}

if TYPE_CHECKING:
    from hermes_tui_gateway.wire_params_answers import ApprovalRespondParams as ApprovalRespondParams
    from hermes_tui_gateway.wire_params_answers import ClarifyRespondParams as ClarifyRespondParams
    from hermes_tui_gateway.wire_params_answers import SecretRespondParams as SecretRespondParams
    from hermes_tui_gateway.wire_params_answers import SudoRespondParams as SudoRespondParams
    from hermes_tui_gateway.wire_params_prompt import PromptSubmitParams as PromptSubmitParams
    from hermes_tui_gateway.wire_params_prompt import TextParams as TextParams
    from hermes_tui_gateway.wire_params_session import NoParams as NoParams
    from hermes_tui_gateway.wire_params_session import SessionBranchParams as SessionBranchParams
    from hermes_tui_gateway.wire_params_session import SessionHistoryParams as SessionHistoryParams
    from hermes_tui_gateway.wire_params_session import SessionListParams as SessionListParams
    from hermes_tui_gateway.wire_params_session import SessionResumeParams as SessionResumeParams
    from hermes_tui_gateway.wire_params_session import SessionTitleParams as SessionTitleParams
    from hermes_tui_gateway.wire_params_session import SnapshotParams as SnapshotParams
    from hermes_tui_gateway.wire_params_session import WorkspaceParams as WorkspaceParams


def __getattr__(name: str) -> Any:
    """Make a params model on its first use (see ``_LATER``)."""
    module = _LATER.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    model = getattr(importlib.import_module(module), name)
    globals()[name] = model
    return model
