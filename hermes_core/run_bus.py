"""The run bus contract, typed (docs/plugin-hooks.md#hermes_run_buses): where the events and the
control of ``hermes api`` runs travel between instances.

The bus carries a run's numbered events, a shared record per run (who owns it, its last
status), liveness of the instances, and commands for a run's owner. Payloads are opaque to it: an
event is its ``seq`` plus JSON text the bus stores and hands back unchanged, a status
(:class:`RunStatus`) the few fields the bus reads given explicitly plus the caller's document,
also unchanged JSON text. A bus never parses either. It never makes up an event of its own: when
a run's owner is gone it reports :class:`OwnerGone` ("owner gone, last seq N") to the
:class:`RunOwner` given at start, which decides the run's end (:class:`RunEnd`; the API server:
``run.failed``, ``owner_lost``); the bus commits that end, once for the run everywhere.

A bus plugin's ``RunBusSpec.factory`` is a :class:`RunBusFactory` returning a :class:`RunBus`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypedDict

#: A command's arguments or answer, and a bus's diagnostics: a JSON object.
JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RunStatus:
    """A run's status as the bus carries it: what the bus reads, given by the caller, and the
    caller's whole status document, which the bus stores and hands back unchanged.

    :ivar document: the status as JSON text (the API server's run status object); opaque.
    :ivar last_seq: the last event published for the run (0: none).
    :ivar status: the run's state (``running``, ``failed``...), for the bus's logs.
    :ivar error_code: why it failed, when it did, for the bus's logs.
    :ivar session_id: the run's session (for a run the bus lost and ends from this status).
    """

    document: str
    last_seq: int = 0
    status: str = ""
    error_code: str | None = None
    session_id: str = ""


@dataclass(frozen=True, slots=True)
class RunEnd:
    """A run's end as the owner side decides it: the terminal event (its ``seq`` and its JSON
    text, opaque to the bus) and the final status."""

    seq: int
    payload: str
    status: RunStatus


class ControlHandler(Protocol):
    """``on_control(command, run_id, args, traceparent=...)``, run on the owner for a command
    another instance sent; its answer (JSON-ready) goes back to the sender. ``traceparent`` is
    the W3C trace context the sender put beside the command (None: none)."""

    def __call__(
        self, command: str, run_id: str, args: JsonObject, traceparent: str | None = None
    ) -> Awaitable[JsonObject]: ...


class BusEvent(NamedTuple):
    """One event of a run's stream: its number, its JSON text as published, and whether it ends
    the run."""

    seq: int
    payload: str
    terminal: bool


class BusRun(TypedDict):
    """The shared record of a run: its owner instance, who it is for, its last published status
    and whether the owner still says it is alive."""

    owner: str
    principal: str
    session_id: str
    status: RunStatus
    alive: bool


@dataclass(frozen=True, slots=True)
class OwnerGone:
    """A run whose owner is gone: ``last_seq`` is the last event the bus holds of it (0: none);
    ``reserved`` the highest seq the owner may have shown its own readers before the bus got
    them (never below ``last_seq``).

    The run's end is numbered right after the last event the owner can have shown, between
    ``last_seq + 1`` and ``reserved + 1``: the owner side knows what was shown (the API server
    reads the session's event log), the bus only the bounds.
    """

    run_id: str
    owner: str
    last_seq: int
    reserved: int


class RunOwner(Protocol):
    """What a bus tells the owner side (the API server's run manager) about its runs."""

    def shown(self, run_id: str, upto: int) -> None:
        """Events of the run up to seq ``upto`` may be shown to this process's readers: no other
        instance will ever give those seqs another meaning."""

    def hold(self, run_id: str, upto: int) -> None:
        """The bus can no longer vouch that this instance still owns the run (its liveness lease
        lapsed): show nothing past seq ``upto`` until :meth:`release`."""

    def release(self, run_id: str) -> None:
        """The bus vouches for this instance's ownership of the run again: end a :meth:`hold`."""

    def lost(self, run_id: str, status: RunStatus) -> None:
        """The run was ended elsewhere (its owner presumed lost); ``status`` is how it ended."""

    async def owner_gone(self, gone: OwnerGone, status: RunStatus) -> RunEnd:
        """A run's owner is gone: return its end (the terminal event's ``seq`` in
        ``gone.last_seq + 1 .. gone.reserved + 1``, and the final status), for the bus to commit.

        :param status: the run's last status on the bus.
        """
        ...

    def reaped(self, run_id: str, principal: str, status: RunStatus) -> None:
        """This instance ended another instance's run (its owner is gone); ``status`` is its final
        status, to be stored durably at once."""

    async def ended_elsewhere(self, run_ids: list[str]) -> dict[str, RunStatus]:
        """Of these runs, about to be announced again after the bus lost its records, return the
        final status of those the durable records say ended elsewhere."""
        ...


class RunBus(Protocol):
    """What ``hermes api`` needs of a bus.

    The owner of a run publishes its events and statuses; the bus tells it (:class:`RunOwner`)
    how far its events may be shown, and whether the run was ended elsewhere. The run's end is
    committed with :meth:`settle`, exactly once for the run everywhere.
    """

    #: The backend's name (``bus.backend``).
    name: str
    #: This process's name on the bus (its control stream, its liveness).
    instance_id: str
    #: Whether other processes share this bus (a run's events, record and commands reach every
    #: instance on it); False for a bus that stays inside this process. Callers decide by this,
    #: never by the backend's name.
    shared: bool

    async def start(self, on_control: ControlHandler, owner: RunOwner | None) -> None:
        """Connect, announce this instance and start serving commands for its runs; ``owner``
        hears back about them (a bus started without one ends no run).

        :raises ConnectionError: the server cannot be reached (one clear start-up error).
        """
        ...

    async def close(self) -> None:
        """Send what is queued, stop saying this instance is alive, disconnect."""
        ...

    async def diagnostics(self) -> JsonObject:
        """A JSON-ready health report (``ok``, ``backend``, ...); never raises."""
        ...

    def publish(self, run_id: str, seq: int, payload: str, terminal: bool) -> None:
        """Queue event ``seq`` of a run this instance owns (sent in order, without waiting);
        ``payload`` is its JSON text, stored and returned unchanged."""
        ...

    def claim(self, run_id: str, principal: str, session_id: str, status: RunStatus) -> None:
        """Queue the run's shared record: this instance owns it."""
        ...

    def update(self, run_id: str, status: RunStatus, terminal: bool) -> None:
        """Queue the run's latest status for other instances."""
        ...

    async def settle(self, run_id: str, end: RunEnd) -> RunStatus | None:
        """Commit the run's ``end`` (terminal event and final status) if this instance still
        owns the run (waiting while the bus is away).

        :returns: None when committed, else the status the run ended with elsewhere.
        """
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
        args: JsonObject,
        timeout_s: float,
        *,
        traceparent: str | None = None,
    ) -> JsonObject:
        """Deliver a command to the run's owner and return its answer, or ``{"error":
        "owner_lost"}`` / ``{"error": "owner_timeout"}``. ``traceparent`` travels in the
        message's envelope, beside the opaque ``args``, and reaches the owner's handler."""
        ...

    async def reap(self, run_id: str, principal: str | None = None, status: RunStatus | None = None) -> bool:
        """End the run if its owner is gone for sure, with the end :meth:`RunOwner.owner_gone`
        decides; True when the run is (now) ended on the bus. A run the bus does not know is
        ended only given its ``principal`` and last ``status``, once the bus has been up long
        enough that a live owner would have announced it again."""
        ...


class RunBusFactory(Protocol):
    """How ``hermes api`` builds a bus from its settings (``RunBusSpec.factory``)."""

    def __call__(
        self,
        *,
        url: str | None,
        instance_id: str,
        heartbeat_s: float,
        owner_grace_s: float,
        journal_events: int,
        retention_s: float,
    ) -> RunBus:
        """Return an unstarted bus.

        :param url: ``bus.url`` (the server), when the backend needs one.
        :param instance_id: this process's name on the bus.
        :param heartbeat_s: how often this process says it is alive.
        :param owner_grace_s: how long an instance may stay silent before its runs are ended.
        :param journal_events: how many events a run's stream keeps.
        :param retention_s: how long a settled run's stream and record stay.
        :raises ConfigError: a setting the backend needs is missing.
        """
        ...
