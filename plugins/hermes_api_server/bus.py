"""The run bus seam: where run events and run control travel (docs/reference/api-server.md#run-bus).

``bus.backend = "memory"`` (the default) keeps everything in this process: a run's journal is the
only copy of its events and only this process can steer or stop it. A plugin's bus (``redis``)
also sends each event to a shared stream and routes commands to the run's owner instance.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from hermes_api_server.errors import ApiError

if TYPE_CHECKING:
    from hermes_api_server.settings import ApiSettings
    from hermes_core import Kernel


class ControlHandler(Protocol):
    """``on_control(command, run_id, args, traceparent=...)``, run on the owner for a command
    another instance sent; ``traceparent`` is the sender's (None: it sent none)."""

    def __call__(
        self, command: str, run_id: str, args: dict[str, Any], traceparent: str | None = None
    ) -> Awaitable[dict[str, Any]]: ...


class RunOwner(Protocol):
    """What a bus tells the run manager about the runs this instance owns."""

    def shown(self, run_id: str, upto: int) -> None:
        """Events of the run up to seq ``upto`` may be shown to this process's readers: no other
        instance will ever give those seqs another meaning."""

    def hold(self, run_id: str, upto: int) -> None:
        """The bus can no longer vouch that this instance still owns the run (its liveness lease
        lapsed): show nothing past seq ``upto`` until :meth:`release`."""

    def release(self, run_id: str) -> None:
        """The bus vouches for this instance's ownership of the run again: end a :meth:`hold`."""

    def lost(self, run_id: str, status: dict[str, Any]) -> None:
        """The run was ended elsewhere (its owner presumed lost); ``status`` is how it ended."""

    async def owner_gone(
        self, run_id: str, last_seq: int, reserved: int, status: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The run's owner is gone ("owner gone, last seq N"): return the terminal event and the
        final status it makes, for the bus to commit.

        :param last_seq: the last event the bus holds of the run.
        :param reserved: the highest seq the owner may have shown its own readers (at least
            ``last_seq``); the event is numbered in ``last_seq + 1 .. reserved + 1``, right after
            the last one the owner can have shown.
        """
        ...

    def reaped(self, run_id: str, principal: str, status: dict[str, Any]) -> None:
        """This instance ended another instance's run (its owner is gone); ``status`` is its final
        status, to be stored durably at once."""

    async def ended_elsewhere(self, run_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Of these runs, about to be announced again after the bus lost its records, return the
        final status of those the durable records say ended elsewhere."""
        ...


class RunBus(Protocol):
    """What the run manager needs of a bus (a plugin's ``RunBusSpec.factory`` returns one).

    The owner of a run publishes its events and statuses; the bus tells it (:class:`RunOwner`)
    how far its events may be shown, and whether the run was ended elsewhere. The run's end is
    committed with :meth:`settle`, exactly once for the run everywhere.
    """

    name: str
    instance_id: str
    #: Whether other instances share the bus (see ``hermes_core.RunBus.shared``).
    shared: bool

    async def start(self, on_control: ControlHandler, owner: RunOwner) -> None: ...
    async def close(self) -> None: ...
    async def diagnostics(self) -> dict[str, Any]: ...
    def publish(self, run_id: str, seq: int, payload: dict[str, Any], terminal: bool) -> None: ...
    def claim(self, run_id: str, principal: str, session_id: str, status: dict[str, Any]) -> None: ...
    def update(self, run_id: str, status: dict[str, Any], terminal: bool) -> None: ...
    async def settle(
        self, run_id: str, payload: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Commit the run's terminal event ``payload`` and final ``status`` if this instance still
        owns the run (waiting while the bus is away); None when committed, else the status the
        run ended with elsewhere."""
        ...

    async def flush(self) -> None: ...
    async def lookup(self, run_id: str) -> dict[str, Any] | None: ...
    async def bounds(self, run_id: str) -> tuple[int, int] | None: ...
    async def read(self, run_id: str, after: int, block_s: float) -> list[tuple[int, str, bool]]: ...
    async def send(
        self,
        owner: str,
        command: str,
        run_id: str,
        args: dict[str, Any],
        timeout_s: float,
        *,
        traceparent: str | None = None,
    ) -> dict[str, Any]:
        """Deliver a command to the run's owner; ``traceparent`` travels beside it (never inside
        ``args``) and reaches the owner's ``on_control``."""
        ...

    async def reap(
        self, run_id: str, principal: str | None = None, status: dict[str, Any] | None = None
    ) -> bool:
        """End the run with ``owner_lost`` if its owner is gone for sure; True when it is (now)
        ended on the bus. A run the bus does not know is ended only given its ``principal`` and
        last ``status``, once the bus has been up long enough that a live owner would have
        announced it again."""
        ...


class LocalBus:
    """The in-process bus: nothing leaves this process, no other instance is known."""

    name = "memory"
    shared = False

    def __init__(self, owner: RunOwner | None = None) -> None:
        self.instance_id = instance_name()
        self._owner = owner

    async def start(self, on_control: ControlHandler, owner: RunOwner) -> None:
        self._owner = owner

    async def close(self) -> None:
        return None

    async def diagnostics(self) -> dict[str, Any]:
        return {"ok": True, "backend": "memory", "instance_id": self.instance_id}

    def publish(self, run_id: str, seq: int, payload: dict[str, Any], terminal: bool) -> None:
        if self._owner is not None:
            self._owner.shown(run_id, seq)  # no other instance: every seq is this one's at once

    def claim(self, run_id: str, principal: str, session_id: str, status: dict[str, Any]) -> None:
        return None

    def update(self, run_id: str, status: dict[str, Any], terminal: bool) -> None:
        return None

    async def settle(
        self, run_id: str, payload: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any] | None:
        return None

    async def flush(self) -> None:
        return None

    async def lookup(self, run_id: str) -> dict[str, Any] | None:
        return None

    async def bounds(self, run_id: str) -> tuple[int, int] | None:
        return None

    async def read(self, run_id: str, after: int, block_s: float) -> list[tuple[int, str, bool]]:
        return []

    async def send(
        self,
        owner: str,
        command: str,
        run_id: str,
        args: dict[str, Any],
        timeout_s: float,
        *,
        traceparent: str | None = None,
    ) -> dict[str, Any]:
        return {"error": "owner_lost"}

    async def reap(
        self, run_id: str, principal: str | None = None, status: dict[str, Any] | None = None
    ) -> bool:
        return False


@dataclass(slots=True)
class RemoteRun:
    """A run another instance owns, as the shared record describes it."""

    run_id: str
    owner: str
    alive: bool
    session_id: str
    status: dict[str, Any]


def instance_name() -> str:
    """Return a name unique to this process: host, pid and a random tail."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


def build_bus(kernel: Kernel, settings: ApiSettings) -> RunBus:
    """Return the bus ``[bus] backend`` names (not started).

    :raises hermes_core.ConfigError: an unknown backend or a bus without its server.
    """
    from hermes_core import ConfigError

    options = kernel.settings.bus
    if options.backend == "memory":
        return LocalBus()
    spec = kernel.registry.buses.get(options.backend)
    if spec is None:
        known = ", ".join(["memory", *kernel.registry.buses])
        raise ConfigError(f"unknown bus backend {options.backend!r}; available: {known}")
    bus: RunBus = spec.factory(
        url=options.url,
        instance_id=instance_name(),
        heartbeat_s=options.heartbeat_s,
        owner_grace_s=options.owner_grace_s,
        journal_events=settings.run_journal_events,
        retention_s=settings.run_journal_retention_s,
    )
    return bus


def owner_error(answer: dict[str, Any], run_id: str) -> ApiError | None:
    """Turn a bus answer into the HTTP error it stands for, if it is one."""
    error = answer.get("error")
    if error is None:
        return None
    if error == "owner_lost":
        return ApiError(
            409,
            "run_owner_lost",
            f"The instance that owned run {run_id} is gone; the run ended",
            param="run_id",
        )
    if error == "owner_timeout":
        return ApiError(
            503,
            "run_owner_unavailable",
            f"The instance that owns run {run_id} did not answer in time; try again",
            headers={"Retry-After": "1"},
        )
    if error == "api_error":
        return ApiError(int(answer.get("status", 409)), str(answer.get("code")), str(answer.get("message")))
    return ApiError(503, "run_owner_unavailable", f"The owner of run {run_id} failed: {error}")
