"""The run bus contract, typed (docs/plugin-hooks.md#hermes_run_buses): where the events and the
control of ``hermes api`` runs travel between instances.

The bus carries numbered payloads it never reads (the API server's run events, as JSON text),
a shared record per run (who owns it, its last status, again opaque text), liveness of the
instances, and commands for a run's owner. It never writes an event of its own: when a run's
owner is gone, :meth:`RunBus.gone` reports :class:`OwnerGone` ("owner gone, last seq N") and the
caller decides the run's end and appends it with :meth:`RunBus.settle`.

A bus plugin's ``RunBusSpec.factory`` is a :class:`RunBusFactory`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class ControlHandler(Protocol):
    """``on_control(command, run_id, args, traceparent=...)``, run on the owner for a command
    another instance sent; its answer (JSON-ready) goes back to the sender. ``traceparent`` is
    the W3C trace context the sender put beside the command (None: none)."""

    def __call__(
        self, command: str, run_id: str, args: dict[str, Any], traceparent: str | None = None
    ) -> Awaitable[dict[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class BusEvent:
    """One event of a run's stream: its number, the payload as published, and whether it ends
    the run."""

    seq: int
    payload: str
    terminal: bool


@dataclass(frozen=True, slots=True)
class BusRun:
    """The shared record of a run: its owner instance, who it is for, its last published status
    (opaque text) and whether the owner still says it is alive."""

    run_id: str
    owner: str
    principal: str
    session_id: str
    status: str
    alive: bool


@dataclass(frozen=True, slots=True)
class OwnerGone:
    """A run whose owner is gone: ``last_seq`` is the last event its stream holds (0: none);
    ``reserved`` the highest seq the owner may have shown its own readers before its stream got
    them (never below ``last_seq``).

    The caller ends the run with an event numbered right after the last one the owner can have
    shown, between ``last_seq + 1`` and ``reserved + 1`` (:meth:`RunBus.settle`): the caller knows
    what was shown (the API server reads the session's event log), the bus only the bounds.
    """

    run_id: str
    owner: str
    last_seq: int
    reserved: int = 0


class RunBus(Protocol):
    """What ``hermes api`` needs of a bus."""

    #: The backend's name (``bus.backend``).
    name: str
    #: This process's name on the bus (its control stream, its liveness).
    instance_id: str
    #: Whether other processes share this bus (a run's events, record and commands reach every
    #: instance on it); False for a bus that stays inside this process. Callers decide by this,
    #: never by the backend's name.
    shared: bool

    async def start(self, on_control: ControlHandler) -> None:
        """Connect, announce this instance and start serving commands for its runs.

        :raises ConnectionError: the server cannot be reached (one clear start-up error).
        """
        ...

    async def close(self) -> None:
        """Send what is queued, stop saying this instance is alive, disconnect."""
        ...

    async def diagnostics(self) -> Mapping[str, Any]:
        """A JSON-ready health report (``ok``, ``backend``, ...); never raises."""
        ...

    def publish(self, run_id: str, seq: int, payload: str, *, terminal: bool = False) -> None:
        """Queue event ``seq`` of a run this instance owns (sent in order, without waiting)."""
        ...

    def claim(self, run_id: str, principal: str, session_id: str, status: str) -> None:
        """Queue the run's shared record: this instance owns it."""
        ...

    def update(self, run_id: str, status: str, *, terminal: bool = False) -> None:
        """Queue the run's latest status for other instances."""
        ...

    async def flush(self) -> None:
        """Wait until everything queued so far was sent."""
        ...

    async def lookup(self, run_id: str) -> BusRun | None:
        """Return the run's shared record, or None for a run the bus does not know."""
        ...

    async def bounds(self, run_id: str) -> tuple[int, int] | None:
        """Return the first and last seq the run's stream holds; None when it holds none."""
        ...

    async def read(self, run_id: str, after: int, block_s: float) -> list[BusEvent]:
        """Return the events numbered above ``after``, waiting up to ``block_s`` for the first."""
        ...

    async def send(
        self,
        owner: str,
        command: str,
        run_id: str,
        args: Mapping[str, Any],
        timeout_s: float,
        *,
        traceparent: str | None = None,
    ) -> dict[str, Any]:
        """Deliver a command to the run's owner and return its answer, or ``{"error":
        "owner_lost"}`` / ``{"error": "owner_timeout"}``. ``traceparent`` travels in the
        message's envelope, beside the opaque ``args``, and reaches the owner's handler."""
        ...

    async def gone(self, run_id: str) -> OwnerGone | None:
        """Tell whether the run's owner is gone (past the bus's liveness grace) and where its
        stream ends; None while the owner lives, or when the run has ended already."""
        ...

    async def settle(self, gone: OwnerGone, payload: str, seq: int | None = None) -> bool:
        """Append ``payload`` as the terminal event ``seq`` (default ``gone.last_seq + 1``; at most
        ``max(gone.last_seq, gone.reserved) + 1``) of a run whose owner is gone, only if the
        stream still ends at ``gone.last_seq``.

        :returns: True when the run now ends with it; False when the stream moved on (another
            instance settled it first, or the owner came back and published).
        """
        ...


class RunBusFactory(Protocol):
    """How ``hermes api`` builds a bus from its settings (``RunBusSpec.factory``)."""

    def __call__(
        self,
        *,
        url: str | None,
        instance_id: str,
        heartbeat_s: float,
        journal_events: int,
        retention_s: float,
    ) -> RunBus:
        """Return an unstarted bus.

        :param url: ``bus.url`` (the server), when the backend needs one.
        :param instance_id: this process's name on the bus.
        :param heartbeat_s: how often this process says it is alive.
        :param journal_events: how many events a run's stream keeps.
        :param retention_s: how long a settled run's stream and record stay.
        :raises ConfigError: a setting the backend needs is missing.
        """
        ...
