"""The Redis key names the run bus uses (one place, so operators can find them)."""

from __future__ import annotations

PREFIX = "hermes:"


def run_stream(run_id: str) -> str:
    """A run's events; entry ids are ``{seq}-0``."""
    return f"{PREFIX}run:{run_id}"


def run_record(run_id: str) -> str:
    """A hash: the run's owner instance, principal, session and latest status."""
    return f"{PREFIX}runinfo:{run_id}"


def alive(instance_id: str) -> str:
    """Exists while the instance heartbeats."""
    return f"{PREFIX}inst:{instance_id}"


INSTANCES = f"{PREFIX}instances"

#: A hash: since when (``since``) Redis has been up and reachable without a break, and the last
#: heartbeat of any instance (``beat``), on Redis's clock.
CLOCK = f"{PREFIX}bus:clock"


def open_runs(instance_id: str) -> str:
    """A set of the instance's unsettled runs (what a reaper ends when it dies)."""
    return f"{PREFIX}instruns:{instance_id}"


def control(instance_id: str) -> str:
    """The instance's control stream (steer, stop, approval answers for its runs)."""
    return f"{PREFIX}ctl:{instance_id}"


def reaping(instance_id: str) -> str:
    """A short lock: who ends a dead instance's runs."""
    return f"{PREFIX}reap:{instance_id}"


def reply(token: str) -> str:
    """A list the owner pushes one control answer onto."""
    return f"{PREFIX}reply:{token}"


CONTROL_GROUP = "owner"
