"""Writer leases as rows with an owner, an expiry and a fencing epoch.

Expiry is measured on the database server's clock, so instances whose clocks disagree still
agree on who holds a lease. Every change of hands raises the epoch; a write that carries an
older epoch (a paused former owner) is refused.
"""

from __future__ import annotations

from typing import Any

_NOW = "extract(epoch FROM clock_timestamp())"
# Taking a lease commits without waiting for its WAL flush (synchronous_commit off for this one
# transaction; the pooled connection keeps its own setting). It is on the path to a turn's first
# token and needs no flush of its own: every write under the lease carries its owner and epoch,
# and commits with a flush that covers the earlier lease record too. Should the server crash
# before that, the lease is gone with it, and the writes fenced on it are refused (LeaseLost),
# never let through.
_ACQUIRE = f"""
INSERT INTO hermes_leases AS l (session_id, owner, epoch, heartbeat_at, expires_at)
SELECT %(sid)s, %(owner)s, 1, {_NOW}, {_NOW} + %(ttl)s
FROM (SELECT set_config('synchronous_commit', 'off', true)) AS no_flush
ON CONFLICT (session_id) DO UPDATE
SET owner = EXCLUDED.owner,
    epoch = CASE WHEN l.owner = EXCLUDED.owner THEN l.epoch ELSE l.epoch + 1 END,
    heartbeat_at = EXCLUDED.heartbeat_at,
    expires_at = EXCLUDED.expires_at
WHERE l.owner IS NULL OR l.owner = EXCLUDED.owner OR l.owner = %(take_over)s OR l.expires_at < {_NOW}
RETURNING epoch
"""


# A new session's lease taken by the statement that stores the session (parameters: session id,
# owner, ttl, session id): as ``_ACQUIRE`` without a takeover, and only while no session with the
# id is stored; its RETURNING epoch is what the session insert waits for. That statement commits
# with a flush: it stores the first rows too.
LEASE_NEW_CTE = f"""l AS (
INSERT INTO hermes_leases AS hl (session_id, owner, epoch, heartbeat_at, expires_at)
SELECT %s, %s, 1, {_NOW}, {_NOW} + %s WHERE NOT EXISTS (SELECT 1 FROM hermes_sessions WHERE id = %s)
ON CONFLICT (session_id) DO UPDATE
SET owner = EXCLUDED.owner,
    epoch = CASE WHEN hl.owner = EXCLUDED.owner THEN hl.epoch ELSE hl.epoch + 1 END,
    heartbeat_at = EXCLUDED.heartbeat_at,
    expires_at = EXCLUDED.expires_at
WHERE hl.owner IS NULL OR hl.owner = EXCLUDED.owner OR hl.expires_at < {_NOW}
RETURNING epoch)"""


# A write's fence (parameters: session id, owner, epoch): the lease row, share-locked so that a
# takeover waits for the write to commit; the write touches nothing unless ``EXISTS (SELECT 1 FROM l)``.
FENCE_CTE = "l AS (SELECT 1 FROM hermes_leases WHERE session_id = %s AND owner = %s AND epoch = %s FOR SHARE)"


async def acquire(
    cur: Any, session_id: str, owner: str, ttl_s: float, take_over: str | None
) -> tuple[str | None, int]:
    """Take the lease in one statement.

    :returns: ``(None, epoch)`` when taken, else ``(holder, 0)``.
    """
    params = {"sid": session_id, "owner": owner, "ttl": float(ttl_s), "take_over": take_over}
    for _ in range(3):  # the holder may release between the two statements: try again
        await cur.execute(_ACQUIRE, params)
        row = await cur.fetchone()
        if row is not None:
            return None, int(row[0])
        await cur.execute("SELECT owner FROM hermes_leases WHERE session_id = %s", (session_id,))
        held = await cur.fetchone()
        if held is not None and held[0] is not None:
            return str(held[0]), 0
    return "unknown", 0


async def renew(cur: Any, session_id: str, owner: str, ttl_s: float) -> int | None:
    """Extend our lease; return its epoch, or None when we do not hold it."""
    await cur.execute(
        f"UPDATE hermes_leases SET heartbeat_at = {_NOW}, expires_at = {_NOW} + %s "
        "WHERE session_id = %s AND owner = %s RETURNING epoch",
        (float(ttl_s), session_id, owner),
    )
    row = await cur.fetchone()
    return None if row is None else int(row[0])


async def release(cur: Any, session_id: str, owner: str) -> None:
    """Drop our lease in one statement. The row stays (with its epoch) while the session exists,
    so epochs only grow; a reservation for a session that was never created goes away."""
    await cur.execute(
        "WITH d AS (DELETE FROM hermes_leases WHERE session_id = %(sid)s AND owner = %(owner)s "
        "AND NOT EXISTS (SELECT 1 FROM hermes_sessions WHERE id = %(sid)s)) "
        "UPDATE hermes_leases SET owner = NULL, expires_at = 0 WHERE session_id = %(sid)s "
        "AND owner = %(owner)s AND EXISTS (SELECT 1 FROM hermes_sessions WHERE id = %(sid)s)",
        {"sid": session_id, "owner": owner},
    )


async def holder(cur: Any, session_id: str) -> tuple[str | None, int]:
    """Return the current owner (None when free) and epoch of a session's lease."""
    await cur.execute("SELECT owner, epoch FROM hermes_leases WHERE session_id = %s", (session_id,))
    row = await cur.fetchone()
    return (None, 0) if row is None else (row[0], int(row[1]))


async def check_fence(cur: Any, session_id: str, owner: str, epoch: int) -> bool:
    """Inside a transaction: share-lock our lease row; False when it changed hands."""
    await cur.execute(
        "SELECT 1 FROM hermes_leases WHERE session_id = %s AND owner = %s AND epoch = %s FOR SHARE",
        (session_id, owner, epoch),
    )
    return await cur.fetchone() is not None
