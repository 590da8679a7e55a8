"""The run bus seam: where run events and run control travel (docs/reference/api-server.md#run-bus).

``bus.backend = "memory"`` (the default) keeps everything in this process: a run's journal is the
only copy of its events and only this process can steer or stop it. A plugin's bus (``redis``)
also sends each event to a shared stream and routes commands to the run's owner instance.
The contract every bus meets is the kernel's (``hermes_core.RunBus``, built by a
``hermes_core.RunBusFactory``; this server is its ``hermes_core.RunOwner``).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_api_server.errors import ApiError, dumps
from hermes_core import BusEvent, BusRun, ControlHandler, RunBus, RunEnd, RunOwner, RunStatus

if TYPE_CHECKING:
    from hermes_api_server.settings import ApiSettings
    from hermes_core import Kernel


class LocalBus:
    """The in-process bus: nothing leaves this process, no other instance is known."""

    name = "memory"
    shared = False

    def __init__(self, owner: RunOwner | None = None) -> None:
        self.instance_id = instance_name()
        self._owner = owner

    async def start(self, on_control: ControlHandler, owner: RunOwner | None) -> None:
        self._owner = owner

    async def close(self) -> None:
        return None

    async def diagnostics(self) -> dict[str, Any]:
        return {"ok": True, "backend": "memory", "instance_id": self.instance_id}

    def publish(self, run_id: str, seq: int, payload: str, terminal: bool) -> None:
        if self._owner is not None:
            self._owner.shown(run_id, seq)  # no other instance: every seq is this one's at once

    def claim(self, run_id: str, principal: str, session_id: str, status: RunStatus) -> None:
        return None

    def update(self, run_id: str, status: RunStatus, terminal: bool) -> None:
        return None

    async def settle(self, run_id: str, end: RunEnd) -> RunStatus | None:
        return None

    async def flush(self) -> None:
        return None

    async def lookup(self, run_id: str) -> BusRun | None:
        return None

    async def bounds(self, run_id: str) -> tuple[int, int] | None:
        return None

    async def read(self, run_id: str, after: int, block_s: float) -> list[BusEvent]:
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

    async def reap(self, run_id: str, principal: str | None = None, status: RunStatus | None = None) -> bool:
        return False


@dataclass(slots=True)
class RemoteRun:
    """A run another instance owns, as the shared record describes it."""

    run_id: str
    owner: str
    alive: bool
    session_id: str
    status: dict[str, Any]


def to_bus(status: dict[str, Any]) -> RunStatus:
    """A run status object as the bus carries it: the fields the bus reads, and the object as
    JSON text (opaque to the bus)."""
    code = status.get("error_code")
    return RunStatus(
        dumps(status),
        last_seq=int(status.get("last_seq") or 0),
        status=str(status.get("status") or ""),
        error_code=code if isinstance(code, str) else None,
        session_id=str(status.get("session_id") or ""),
    )


def from_bus(status: RunStatus) -> dict[str, Any]:
    """The run status object a bus handed back."""
    value = json.loads(status.document) if status.document else {}
    return value if isinstance(value, dict) else {}


def end_for_bus(payload: dict[str, Any], final: dict[str, Any]) -> RunEnd:
    """A run's terminal event and final status, as the bus commits them."""
    return RunEnd(int(payload["seq"]), dumps(payload), to_bus(final))


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
    return spec.factory(
        url=options.url,
        instance_id=instance_name(),
        heartbeat_s=options.heartbeat_s,
        owner_grace_s=options.owner_grace_s,
        journal_events=settings.run_journal_events,
        retention_s=settings.run_journal_retention_s,
    )


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
