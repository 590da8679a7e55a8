"""The run bus seam: where run events and run control travel (docs/reference/api-server.md#run-bus).

``bus.backend = "memory"`` (the default) keeps everything in this process: a run's journal is the
only copy of its events and only this process can steer or stop it. A plugin's bus (``redis``)
also sends each event to a shared stream and routes commands to the run's owner instance.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from hermes_api_server.errors import ApiError

if TYPE_CHECKING:
    from hermes_api_server.settings import ApiSettings
    from hermes_core import Kernel

ControlHandler = Callable[[str, str, dict[str, Any]], Awaitable[dict[str, Any]]]


class RunBus(Protocol):
    """What the run manager needs of a bus (a plugin's ``RunBusSpec.factory`` returns one)."""

    name: str
    instance_id: str

    async def start(self, on_control: ControlHandler) -> None: ...
    async def close(self) -> None: ...
    async def diagnostics(self) -> dict[str, Any]: ...
    def publish(self, run_id: str, seq: int, payload: dict[str, Any], terminal: bool) -> None: ...
    def claim(self, run_id: str, principal: str, session_id: str, status: dict[str, Any]) -> None: ...
    def update(self, run_id: str, status: dict[str, Any], terminal: bool) -> None: ...
    async def flush(self) -> None: ...
    async def lookup(self, run_id: str) -> dict[str, Any] | None: ...
    async def bounds(self, run_id: str) -> tuple[int, int] | None: ...
    async def read(self, run_id: str, after: int, block_s: float) -> list[tuple[int, str, bool]]: ...
    async def send(
        self, owner: str, command: str, run_id: str, args: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]: ...
    async def reap(self, run_id: str) -> bool: ...


class LocalBus:
    """The in-process bus: nothing leaves this process, no other instance is known."""

    name = "memory"

    def __init__(self) -> None:
        self.instance_id = instance_name()

    async def start(self, on_control: ControlHandler) -> None:
        return None

    async def close(self) -> None:
        return None

    async def diagnostics(self) -> dict[str, Any]:
        return {"ok": True, "backend": "memory", "instance_id": self.instance_id}

    def publish(self, run_id: str, seq: int, payload: dict[str, Any], terminal: bool) -> None:
        return None

    def claim(self, run_id: str, principal: str, session_id: str, status: dict[str, Any]) -> None:
        return None

    def update(self, run_id: str, status: dict[str, Any], terminal: bool) -> None:
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
        self, owner: str, command: str, run_id: str, args: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        return {"error": "owner_lost"}

    async def reap(self, run_id: str) -> bool:
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
