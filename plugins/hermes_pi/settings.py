"""The ``[pi]`` settings of ``hermes pi`` (docs/reference/pi.md#settings), validated by the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

QuestionKind = Literal["approval", "clarify", "sudo", "secret"]
ALL_KINDS: list[QuestionKind] = ["approval", "clarify", "sudo", "secret"]


class PiSettings(BaseModel):
    """Settings of ``hermes pi``: flags > environment > ``[pi]`` in config.toml > defaults."""

    model_config = ConfigDict(extra="forbid")

    #: The approval profile of sessions this transport creates (pi runs tools without asking).
    approval_profile: Literal["default", "accept_edits", "ask_everything", "off"] = "accept_edits"
    #: The question kinds sent to the client as extension-UI dialogs; other kinds get no answerer.
    answer: list[QuestionKind] = Field(default_factory=lambda: list(ALL_KINDS))
    #: Where session locators (``sessionFile``) live; default ``<data dir>/pi-sessions``.
    session_dir: Path | None = None
