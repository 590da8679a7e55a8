"""From one input line to its response (docs/reference/pi.md#responses).

A line that is not a JSON object gets pi's ``parse`` failure; an ``extension_ui_response`` answers
a dialog and gets no response; any other object is a command, run on its own task so a slow one
(``abort``, ``compact``, ``bash``) never holds up the next. Each command gets exactly one response:
its data, or ``success: false`` with a message. An unexpected failure is logged with a traceback
and answered with a short message that names the log line, never the exception text.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hermes_core import HermesError, rpc
from hermes_pi.wire import BadCommand, Command, failure, success

if TYPE_CHECKING:
    from hermes_pi.host import PiHost

log = logging.getLogger("hermes.pi")


class Null:
    """Return this from a handler to answer with ``data: null``."""


class RawData:
    """Return this from a handler whose ``data`` is already JSON text (a deep tree)."""

    def __init__(self, text: str) -> None:
        self.text = text


#: A command handler: returns the response ``data`` (None: no data member).
Handler = Callable[["PiHost", Command], Awaitable[Any]]


def parse(line: bytes | None) -> dict[str, Any] | dict[str, str]:
    """Decode one line; return the object, or ``{"error": message}`` when it is not one."""
    if line is None:
        return {"error": "the line is longer than 64 MiB"}
    try:
        value = rpc.decode_line(line)
    except (ValueError, RecursionError) as exc:
        return {"error": str(exc)}
    if not isinstance(value, dict):
        return {"error": "a command is a JSON object"}
    return {"ok": value}


class Dispatcher:
    """The table of pi's commands and the rules for answering them.

    :param host: the process state the handlers work on.
    :param handlers: command type -> handler.
    """

    def __init__(self, host: PiHost, handlers: dict[str, Handler]) -> None:
        self.host = host
        self.handlers = handlers

    def parse_failure(self, message: str) -> dict[str, Any]:
        """Return pi's answer to a line that is not a command."""
        return failure(None, "parse", f"Failed to parse command: {message}")

    async def run(self, raw: dict[str, Any]) -> dict[str, Any] | bytes | None:
        """Answer one decoded object: a record, an encoded record, or None (a dialog answer)."""
        if raw.get("type") == "extension_ui_response":
            self.host.dialogs.respond(raw)
            return None
        command = Command(raw)
        handler = self.handlers.get(command.type)
        if handler is None:
            shown = raw.get("type") if isinstance(raw.get("type"), str) else str(raw.get("type"))
            return failure(command.id, shown, f"Unknown command: {shown}")
        try:
            data = await handler(self.host, command)
        except BadCommand as exc:
            return failure(command.id, command.type, str(exc))
        except HermesError as exc:
            return failure(command.id, command.type, self.host.kernel.redactor(str(exc)))
        except Exception:
            error_id = uuid.uuid4().hex[:12]
            log.exception("pi: %s failed (error id %s)", command.type, error_id)
            return failure(command.id, command.type, f"internal error (error id {error_id}, see the log)")
        if data is Null:
            return success(command.id, command.type, None, with_data=True)
        if isinstance(data, RawData):
            head = rpc.encode_frame(success(command.id, command.type))[:-2]  # without "}\n"
            return head + b',"data":' + data.text.encode("utf-8", "backslashreplace") + b"}\n"
        return success(command.id, command.type, data)
