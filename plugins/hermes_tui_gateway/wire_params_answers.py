"""The TUI gateway's typed params of the answers to questions (``clarify.respond`` and the like).

Made on first use: :mod:`hermes_tui_gateway.wire_params` imports this module when a handler first
names one of its models (the reading rules are that module's)."""

from __future__ import annotations

from hermes_tui_gateway.wire_params import ParamsModel, SessionParams


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
