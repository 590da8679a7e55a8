"""Pydantic models of ``GET /v1/responses/{id}/input_items`` for the OpenAPI document
(docs/reference/api-server.md#input-items); like the others, they describe and never validate."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from hermes_api_server.response_models import Open


class StoredInputItem(Open):
    """One item of a request's ``input``: a message (``input_text`` / ``input_image`` parts,
    ``output_text`` for an assistant's) or an echoed ``function_call`` / ``function_call_output``
    / ``reasoning`` item, as sent."""

    id: str
    type: str
    role: Literal["user", "assistant", "system", "developer"] | None = None
    status: str | None = None
    content: list[dict[str, Any]] | None = None


class InputItemList(Open):
    """One page of a response's input items, in ``order``."""

    object: Literal["list"]
    data: list[StoredInputItem]
    first_id: str | None = Field(description="The first item's id (null on an empty page).")
    last_id: str | None = Field(description="The last item's id: the next page's `after`.")
    has_more: bool


ITEM_MODELS: tuple[type[BaseModel], ...] = (InputItemList,)
