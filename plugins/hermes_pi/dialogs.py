"""Questions as pi extension-UI dialogs (docs/reference/pi.md#questions-as-dialogs).

An approval becomes a ``select`` whose options are the question's choices; a clarify question a
``select`` (with choices) or an ``input``; a sudo password and a secret an ``input``. Each request
carries the question's timeout in milliseconds, and the core closes the question itself when it
passes (an approval is then denied), so the client never has to track it. The request id is the
question's own id; an ``extension_ui_response`` with that id answers it, a cancelled one gives the
empty answer (deny, for an approval), and a late or unknown one is ignored, as pi does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core import Kernel, QuestionRequested

log = logging.getLogger("hermes.pi")

#: The option label shown for each approval choice, and back.
CHOICE_LABELS = {
    "once": "Allow once",
    "session": "Allow for this session",
    "always": "Always allow",
    "deny": "Deny",
}
_LABEL_CHOICES = {label: choice for choice, label in CHOICE_LABELS.items()}


@dataclass(slots=True)
class _Open:
    kind: str
    method: str
    options: tuple[str, ...] = ()


class Dialogs:
    """The questions shown to the client and not answered yet, by request id."""

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._open: dict[str, _Open] = {}

    def request(self, ev: QuestionRequested) -> dict[str, Any]:
        """Return the ``extension_ui_request`` for a question and remember it as open."""
        timeout = max(1, int(ev.timeout_s * 1000))
        record: dict[str, Any] = {"type": "extension_ui_request", "id": ev.request_id}
        if ev.kind == "approval":
            choices = tuple(ev.choices or ("once", "deny"))
            options = tuple(CHOICE_LABELS.get(c, c) for c in choices)
            record.update(method="select", title=approval_title(ev), options=list(options), timeout=timeout)
            self._open[ev.request_id] = _Open("approval", "select", options)
        elif ev.kind == "clarify" and ev.choices:
            options = tuple(ev.choices)
            record.update(method="select", title=ev.question or "", options=list(options), timeout=timeout)
            self._open[ev.request_id] = _Open("clarify", "select", options)
        else:
            title, placeholder = _input_texts(ev)
            record.update(method="input", title=title, timeout=timeout)
            if placeholder:
                record["placeholder"] = placeholder
            self._open[ev.request_id] = _Open(ev.kind, "input")
        return record

    def closed(self, request_id: str) -> None:
        """Forget a question the core closed (answered, timed out, interrupted...)."""
        self._open.pop(request_id, None)

    def respond(self, response: dict[str, Any]) -> None:
        """Answer the question an ``extension_ui_response`` names; ignore unknown ids."""
        request_id = response.get("id")
        if not isinstance(request_id, str):
            return
        pending = self._open.pop(request_id, None)
        if pending is None:
            return
        answer = _answer(pending, response)
        result = self._kernel.answer(request_id, answer)
        if result != "ok":
            log.info("pi: the answer to %s came too late (%s)", request_id, result)

    def forget_all(self) -> None:
        """Drop every open dialog (the session they belong to went away)."""
        self._open.clear()


def approval_title(ev: QuestionRequested) -> str:
    """Return the one-line title of an approval dialog: the tool, what it does and why it asks."""
    what = ev.command_redacted or ev.description or ", ".join(ev.paths)
    title = f"Allow {ev.tool_name or 'this tool call'}"
    if what:
        title += f": {what}"
    title += "?"
    if ev.reasons:
        title += f" ({'; '.join(ev.reasons)})"
    return title


def _input_texts(ev: QuestionRequested) -> tuple[str, str | None]:
    if ev.kind == "clarify":
        return ev.question or "", None
    if ev.kind == "sudo":
        return f"Password for sudo: {ev.command or ''}".rstrip(": "), "password"
    return ev.prompt or f"Enter {ev.env_var}", ev.env_var


def _answer(pending: _Open, response: dict[str, Any]) -> str:
    """Turn a response into the core's answer; anything unusable is the empty answer (deny)."""
    deny = "deny" if pending.kind == "approval" else ""
    if response.get("cancelled") is True:
        return deny
    if "confirmed" in response:
        if pending.kind == "approval":
            return "once" if response.get("confirmed") is True else "deny"
        return deny
    value = response.get("value")
    if not isinstance(value, str):
        return deny
    if pending.kind == "approval":
        if value not in pending.options:
            return "deny"
        return _LABEL_CHOICES.get(value, value)
    if pending.method == "select" and value not in pending.options:
        return ""
    return value
