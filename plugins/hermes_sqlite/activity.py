"""Throttle the ``updated_at`` bump of appends: at most one session write per second of activity.

Every append used to update its session's ``updated_at`` as well as insert the row. That UPDATE
rewrites the session's table page and its ``(updated_at, id)`` index page: two of the five pages
a one-row append wrote to the WAL, and over a quarter of its database time. Listings order sessions by last
activity; a second's granularity is plenty for that, so an append skips the bump when this
storage already moved that session's ``updated_at`` to a time less than a second before.

The stamps are touched only by jobs, which run one at a time (no locking of their own). They
only describe writes made through this connection, so :class:`~hermes_sqlite.db_state.DbState`
drops them whenever another connection has committed (it may have set ``updated_at`` itself),
and they are dropped per session when an ``update_session``, ``rewrite`` or ``create_session``
here writes the column.
"""

from __future__ import annotations

INTERVAL_S = 1.0
# Stamps older than INTERVAL_S are useless; prune them once this many accumulate.
_PRUNE_AT = 256


class ActivityStamps:
    """The ``updated_at`` this connection last wrote per session, and when.

    :param interval_s: how long an append may leave ``updated_at`` behind the latest activity.
    """

    def __init__(self, interval_s: float = INTERVAL_S) -> None:
        self._interval_s = interval_s
        self._stamps: dict[str, float] = {}

    def bump_due(self, session_id: str, now: float) -> bool:
        """Say whether an append at ``now`` must write the session's ``updated_at``.

        Ask inside the append's write transaction, after the stamps were checked against
        other connections' commits, so that none can commit between that check and the append.

        :param session_id: the session being appended to.
        :param now: the append's time.
        :returns: True unless this connection stamped the session less than the interval ago.
        """
        stamp = self._stamps.get(session_id)
        # A clock that went backwards (stamp in the future) also bumps.
        return stamp is None or not 0.0 <= now - stamp < self._interval_s

    def bumped(self, session_id: str, now: float) -> None:
        """Record that a committed transaction set the session's ``updated_at`` to ``now``.

        :param session_id: the session.
        :param now: the value written.
        """
        stamps = self._stamps
        if len(stamps) >= _PRUNE_AT and session_id not in stamps:
            stale = now - self._interval_s
            for key in [key for key, stamp in stamps.items() if stamp < stale]:
                del stamps[key]
        stamps[session_id] = now

    def forget(self, session_id: str) -> None:
        """Drop a session's stamp: its ``updated_at`` was written some other way.

        :param session_id: the session.
        """
        self._stamps.pop(session_id, None)

    def clear(self) -> None:
        """Drop every stamp: another connection has written to the database."""
        self._stamps.clear()
