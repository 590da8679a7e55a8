"""The ``[acp]`` settings section (docs/reference/acp.md#settings): default mode, list page size, fs
timeout."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class AcpSettings(BaseModel):
    """Validated ``[acp]`` settings.

    :param default_mode: the approval profile new ACP sessions start in.
    :param list_page_size: entries per ``session/list`` page.
    :param fs_timeout_s: seconds to wait for a client ``fs/*`` answer.
    """

    model_config = ConfigDict(extra="forbid")

    default_mode: Literal["default", "accept_edits", "ask_everything", "off"] = "default"
    list_page_size: int = Field(default=50, ge=1, le=1000)
    fs_timeout_s: float = Field(default=30.0, gt=0, le=3600)
