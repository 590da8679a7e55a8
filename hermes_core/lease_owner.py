"""Who holds a writer lease, and whether that holder is a process that no longer exists.

A lease owner string is ``<host>:<pid>:<start>:<random>``: the host name, the process id, the
process start time as the kernel counts it (clock ticks since boot from ``/proc/<pid>/stat``, or
``-`` where that is not available) and a random part that tells two kernels of one process apart.
Leases expire when they are not renewed, but a process killed with ``kill -9`` cannot release its
leases, and a restarted IDE agent should not wait for the expiry: :func:`holder_is_gone` tells
the opener that the holder is a process on this host that has died, so the lease can be taken
over at once. The start time guards against a new process that was given the dead one's pid.
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
    """

    host: str
    pid: int
    start: str | None


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


def make_owner() -> str:
    """Return a fresh owner string for this process.

    :returns: ``<host>:<pid>:<start>:<random>``.
    """
    pid = os.getpid()
    start = process_start(pid) or _UNKNOWN
    return f"{socket.gethostname()}:{pid}:{start}:{secrets.token_hex(4)}"


def parse_owner(owner: str) -> LeaseOwner | None:
    """Read an owner string; also the older ``<host>:<pid>:<random>`` form.

    :param owner: what storage reported as the holder.
    :returns: its parts, or ``None`` when it is not in either form (then nothing is assumed).
    """
    parts = owner.split(":")
    if len(parts) == 4:
        host, pid, start, _ = parts
    elif len(parts) == 3:
        host, pid, _ = parts
        start = _UNKNOWN
    else:
        return None
    if not pid.isdigit() or not host:
        return None
    return LeaseOwner(host, int(pid), None if start == _UNKNOWN else start)


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
    if parsed is None or parsed.host != socket.gethostname() or parsed.pid == os.getpid():
        return False
    if not _pid_exists(parsed.pid):
        return True
    if parsed.start is None:
        return False
    current = process_start(parsed.pid)
    return current is not None and current != parsed.start
