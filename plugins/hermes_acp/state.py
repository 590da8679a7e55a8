"""Per-session state of the ACP transport: queued prompt tickets, open tool calls, permissions."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core import Session
    from hermes_core.rpc import OutboundRequest


@dataclass(slots=True)
class Ticket:
    """One ``session/prompt`` request, registered before the next frame is read
    (docs/reference/acp.md#inbound-dispatch).

    :param request_id: the inbound request id.
    :param previous: the ticket before it in this session, whose response this one waits for.
    :param responded: resolved once this prompt's response is on the wire.
    :param cancelled: set by ``session/cancel``, ``session/close`` or ``$/cancel_request``.
    :param submitted: the prompt became a core turn.
    """

    request_id: Any
    previous: Ticket | None
    responded: asyncio.Future[None]
    cancelled: bool = False
    submitted: bool = False


@dataclass(slots=True)
class CallState:
    """A tool call announced on the wire and not yet closed.

    :param tool_call: the ``tool_call`` payload as sent (reused for permission requests).
    :param status: the last status sent.
    """

    tool_call: dict[str, Any]
    status: str = "pending"


@dataclass(slots=True)
class AcpSession:
    """A live core session as the ACP transport sees it.

    :param core: the core session.
    :param tickets: prompts registered and not yet answered, oldest first.
    :param last: the most recent ticket (the next one waits for it).
    :param calls: open tool calls of the running turn, by call id.
    :param permissions: pending ``session/request_permission`` requests, by core question id.
    :param gate: resolved when a running ``session/load`` replay has been answered.
    :param closed: ``session/close`` ran.
    """

    core: Session
    tickets: list[Ticket] = field(default_factory=list)
    last: Ticket | None = None
    calls: dict[str, CallState] = field(default_factory=dict)
    permissions: dict[str, OutboundRequest] = field(default_factory=dict)
    gate: asyncio.Future[None] | None = None
    closed: bool = False

    @property
    def id(self) -> str:
        """The session id."""
        return self.core.id

    def new_ticket(self, request_id: Any) -> Ticket:
        """Register a prompt behind the previous one.

        :param request_id: the inbound request id.
        :returns: the ticket.
        """
        ticket = Ticket(request_id, self.last, asyncio.get_running_loop().create_future())
        self.tickets.append(ticket)
        self.last = ticket
        return ticket

    def finish_ticket(self, ticket: Ticket) -> None:
        """Mark a prompt answered, releasing the one behind it.

        :param ticket: the ticket.
        """
        if ticket in self.tickets:
            self.tickets.remove(ticket)
        if not ticket.responded.done():
            ticket.responded.set_result(None)

    def cancel_tickets(self) -> list[Ticket]:
        """Flag every registered prompt cancelled.

        :returns: the tickets flagged.
        """
        for ticket in self.tickets:
            ticket.cancelled = True
        return list(self.tickets)
