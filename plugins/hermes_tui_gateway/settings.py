"""The ``[tui]`` settings of ``hermes tui`` (docs/reference/tui-gateway.md#settings), validated by the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class TuiSettings(BaseModel):
    """Settings of the TUI gateway; flags > ``HERMES_TUI_TOKEN`` > ``[tui]`` > defaults."""

    model_config = ConfigDict(extra="ignore")

    approval_profile: Literal["default", "accept_edits", "ask_everything", "off"] = "accept_edits"
    workers: int = Field(8, ge=1, le=256)
    ring_events: int = Field(512, ge=1)
    ring_bytes: int = Field(4 * 1024 * 1024, ge=1024)
    orphan_grace_s: float = Field(300.0, ge=0)
    busy_policy: Literal["queue", "steer", "interrupt"] = "queue"
    # After a question is answered, the session's events wait this long behind the response
    # (docs/reference/tui-gateway.md#answering-questions).
    answer_settle_s: float = Field(0.5, ge=0, le=5)
    # How long streamed deltas merge: at the start of a reply, and once it is long (the window
    # grows in between; docs/reference/tui-gateway.md#settings).
    stream_interval_s: float = Field(0.033, ge=0.001, le=5)
    stream_interval_long_s: float = Field(1.0, ge=0.001, le=5)
    token: str | None = None
    token_file: Path | None = None
    allow_remote: bool = False
    allow_origin: list[str] = Field(default_factory=list)
