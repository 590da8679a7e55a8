"""The TUI gateway's event and error-code catalogs (``hermes_tui_gateway.wire``) hold everything the
code sends, so the export cannot silently miss an event or a code."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import hermes_tui_gateway
from hermes_core.events import QuestionKind, SubagentKind
from hermes_tui_gateway.wire import ERROR_CODES, EVENTS

SOURCES = sorted(Path(hermes_tui_gateway.__file__).parent.glob("*.py"))


def _source() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in SOURCES)


def test_every_event_the_code_sends_is_in_the_catalog() -> None:
    sent = set(re.findall(r"(?:emit|notify_event)\(\s*\"([a-z_.]+)\"", _source()))
    assert {"gateway.ready", "message.complete", "session.reclaimed"} <= sent
    # Built from a kind: subagent.<kind>, <question kind>.request and .expire.
    sent |= {f"subagent.{kind}" for kind in typing.get_args(SubagentKind)}
    for kind in typing.get_args(QuestionKind):
        sent |= {f"{kind}.request", f"{kind}.expire"}
    missing = sorted(sent - set(EVENTS))
    assert not missing, f"add these to hermes_tui_gateway.wire.EVENTS: {missing}"


def test_every_error_code_the_code_raises_is_in_the_catalog() -> None:
    text = _source()
    raised = {int(code) for code in re.findall(r"GatewayError\(\s*([45]\d{3})\b", text)}
    raised |= {int(code) for code in re.findall(r"ErrorRule\(\s*[^,]+,\s*([45]\d{3})\b", text)}
    assert {4001, 4009, 5005} <= raised
    missing = sorted(raised - set(ERROR_CODES))
    assert not missing, f"add these to hermes_tui_gateway.wire.ERROR_CODES: {missing}"
