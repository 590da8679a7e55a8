"""Who holds a writer lease, and whether that holder is a process that no longer exists.

A lease owner string is ``<host>:<pid>:<start>:<pidns>:<random>``: the host name, the process id,
the process start time as the kernel counts it (clock ticks since boot from ``/proc/<pid>/stat``),
the process-id namespace (``/proc/self/ns/pid``, so that two containers sharing a database and a
host name never judge each other's pids) and a random part that tells two kernels of one process
apart. ``-`` stands for a part the platform does not provide.
Leases expire when they are not renewed, but a process killed with ``kill -9`` cannot release its
leases, and a restarted IDE agent should not wait for the expiry: :func:`holder_is_gone` tells
the opener that the holder is a process on this host that has died, so the lease can be taken
over at once. The start time guards against a new process that was given the dead one's pid
(including this very process, for example an agent that is always pid 1 in its container).
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass

_UNKNOWN = "-"


@dataclass(frozen=True, slots=True)
class LeaseOwner:
    """The parts of an owner string.

    :param host: the host name of the holder.
    :param pid: its process id.
    :param start: its start time (``None`` when it was not recorded).
    :param pidns: its process-id namespace (``None`` when it was not recorded).
    """

    host: str
    pid: int
    start: str | None
    pidns: str | None = None


def process_start(pid: int) -> str | None:
    """Return a process's start time in clock ticks since boot, as text, where Linux tells it.

    :param pid: the process id.
    :returns: field 22 of ``/proc/<pid>/stat``, or ``None`` (no such process, or no ``/proc``).
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces or ")": skip past the last.
    fields = data[data.rfind(b")") + 2 :].split()
    if len(fields) < 20:
        return None
    return fields[19].decode("ascii", "replace")


def pid_namespace() -> str | None:
    """Return the number of this process's pid namespace, where Linux tells it.

    :returns: e.g. ``"4026531836"``, or ``None``.
    """
    try:
        link = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    digits = "".join(ch for ch in link if ch.isdigit())
    return digits or None


def make_owner() -> str:
    """Return a fresh owner string for this process.

    :returns: ``<host>:<pid>:<start>:<pidns>:<random>``.
    """
    pid = os.getpid()
    start = process_start(pid) or _UNKNOWN
    pidns = pid_namespace() or _UNKNOWN
    return f"{socket.gethostname()}:{pid}:{start}:{pidns}:{secrets.token_hex(4)}"


def parse_owner(owner: str) -> LeaseOwner | None:
    """Read an owner string; also the older ``<host>:<pid>:<random>`` form.

    :param owner: what storage reported as the holder.
    :returns: its parts, or ``None`` when it is not in either form (then nothing is assumed).
    """
    parts = owner.split(":")
    if len(parts) == 5:
        host, pid, start, pidns, _ = parts
    elif len(parts) == 3:
        host, pid, _ = parts
        start = pidns = _UNKNOWN
    else:
        return None
    if not pid.isdigit() or not host:
        return None
    return LeaseOwner(
        host,
        int(pid),
        None if start == _UNKNOWN else start,
        None if pidns == _UNKNOWN else pidns,
    )


def _pid_exists(pid: int) -> bool:
    if pid <= 0:
        return True  # never signal a process group; treat as alive
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists but belongs to someone else
        return True
    return True


def holder_is_gone(owner: str) -> bool:
    """Tell whether a lease holder is a process on this host that no longer runs.

    Only a definite answer counts: a holder on another host, an unreadable owner string, or a
    live process with the same pid and no way to compare start times are all treated as alive.

    :param owner: the holder's owner string.
    :returns: ``True`` when the lease may be taken over at once.
    """
    parsed = parse_owner(owner)
    if parsed is None or parsed.host != socket.gethostname():
        return False
    ours = pid_namespace()
    if parsed.pidns is not None and ours is not None and parsed.pidns != ours:
        return False  # its pids are not ours to look at (another container)
    if parsed.pid == os.getpid():
        # Another kernel in this process is alive; an earlier process that had our pid is not.
        return parsed.start is not None and parsed.start != process_start(parsed.pid)
    if not _pid_exists(parsed.pid):
        return True
    if parsed.start is None:
        return False
    current = process_start(parsed.pid)
    return current is not None and current != parsed.start
