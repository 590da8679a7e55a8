"""Register the Redis Streams run bus (``bus.backend = "redis"``) and, with it, the budget
ledger on the same server (docs/reference/budgets.md).

Cheap to import: redis-py and the implementation load only when ``hermes api`` builds the bus.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import ConfigError, LedgerSpec, RunBusSpec, hookimpl

if TYPE_CHECKING:
    from hermes_core import RunBus

URL_VARIABLE = "HERMES_REDIS_URL"


def make_bus(
    *,
    url: str | None,
    instance_id: str,
    heartbeat_s: float,
    owner_grace_s: float = 30.0,
    journal_events: int = 10000,
    retention_s: float = 3600,
) -> RunBus:
    """Build an unstarted Redis run bus (a ``hermes_core.RunBusFactory``).

    :param url: the server, as ``redis://host:port/db``.
    :param instance_id: this process's name on the bus (its control stream, its heartbeat).
    :param heartbeat_s: how often this process renews its heartbeat.
    :param owner_grace_s: how long an instance may stay silent before its runs are ended.
    :param journal_events: how many events a run's stream keeps.
    :param retention_s: how long a settled run's stream and record live.
    :raises ConfigError: when no server is named.
    """
    if not url:
        raise ConfigError(
            f'bus.backend = "redis" needs a server: set {URL_VARIABLE} or bus.url (e.g. redis://127.0.0.1:6379/0)'
        )
    from hermes_redis.bus import RedisRunBus

    return RedisRunBus(
        url,
        instance_id=instance_id,
        heartbeat_s=heartbeat_s,
        owner_grace_s=owner_grace_s,
        journal_events=journal_events,
        retention_s=retention_s,
    )


@hookimpl
def hermes_run_buses() -> RunBusSpec:
    """Declare the ``redis`` run bus.

    :returns: its spec.
    """
    return RunBusSpec(name="redis", factory=make_bus, env={"url": URL_VARIABLE})


def make_ledger(kernel: Any) -> Any:
    """Build the Redis budget ledger when the Redis bus is configured (else None: the kernel's
    records keep the buckets).

    :raises ConfigError: the Redis bus is chosen but names no server.
    """
    bus = kernel.settings.bus
    if bus.backend != "redis":
        return None
    if not bus.url:
        raise ConfigError(f"budgets on the Redis bus need a server: set {URL_VARIABLE} or bus.url")
    from hermes_redis.ledger import RedisLedger

    return RedisLedger(bus.url)


@hookimpl
def hermes_budget_ledgers() -> LedgerSpec:
    """Declare the Redis budget ledger.

    :returns: its spec.
    """
    return LedgerSpec(name="redis", factory=make_ledger)
