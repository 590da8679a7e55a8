"""Hermes' ``_meta`` extensions to ACP messages: the typed shapes the code builds.

ACP reserves ``_meta`` on every message for implementations' own data; Hermes puts its keys under
``hermes``. Every type here is named ``Hermes…``, so no ACP definition is shadowed in the export.
:mod:`hermes_acp.static` builds ``initialize``'s with these types (checked by mypy, no cost at run
time: the early ``initialize`` path imports this module only for type checking) and ``hermes
schema export`` turns them into JSON Schema (:mod:`hermes_acp.schema_doc`).
"""

from __future__ import annotations

from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on 3.12+


class HermesSchemaStamp(TypedDict):
    """The version and ``sha256`` of the schema export the agent speaks (docs/integrating.md)."""

    version: str
    sha256: str


class HermesInitializeFields(TypedDict):
    """``initialize`` result ``_meta.hermes``."""

    schema: HermesSchemaStamp


class HermesInitializeMeta(TypedDict):
    """``initialize`` result ``_meta``."""

    hermes: HermesInitializeFields


class HermesPromptFields(TypedDict, total=False):
    """``session/prompt`` result ``_meta.hermes``: why the turn stopped, when ACP's closed
    ``stopReason`` enum has no exact value for it (docs/protocols/acp.md#budgets)."""

    #: ``budget_exceeded`` (``stopReason`` is then ``max_tokens``)
    stopReason: str
    #: what refused, redacted
    message: str
    #: seconds until trying again may succeed
    retryAfter: float


class HermesPromptMeta(TypedDict, total=False):
    """``session/prompt`` result ``_meta`` (absent unless a budget stopped the turn)."""

    hermes: HermesPromptFields


#: ACP definition → the type of the ``_meta`` Hermes sends with it.
META_EXTENSIONS: dict[str, type] = {
    "InitializeResponse": HermesInitializeMeta,
    "PromptResponse": HermesPromptMeta,
}
