"""Group commit: jobs the database thread found queued together run in one transaction.

Each job runs in a savepoint of its own inside one ``BEGIN IMMEDIATE`` … ``COMMIT``, so a burst
of many sessions' writes pays for one commit instead of one each (see
:func:`hermes_sqlite.schema.write_transaction`, which turns a job's own transaction into that
savepoint while :data:`~hermes_sqlite.schema.GROUPING` is set). A job that fails rolls back to
its savepoint and fails alone; when the group's ``COMMIT`` fails, every job of the group fails.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from hermes_sqlite.loop_waker import Item, Outcome
from hermes_sqlite.schema import GROUPING


def run_one(conn: sqlite3.Connection | None, item: Item) -> list[Outcome]:
    """Run one job on its own; return its outcome.

    :param conn: the connection (None only for the job that opens it).
    :param item: the job.
    :returns: a one-element list.
    """
    job, _, future, _ = item
    try:
        return [(future, job(conn), None)]  # type: ignore[arg-type]
    except BaseException as exc:
        return [(future, None, exc)]


def run_group(
    conn: sqlite3.Connection | None, batch: list[Item], forget: Callable[[], None]
) -> list[Outcome]:
    """Run ``batch`` in one transaction, each job in a savepoint; return their outcomes.

    :param conn: the connection.
    :param batch: the jobs, in submission order.
    :param forget: called when writes the jobs made did not commit after all.
    :returns: one outcome per job, in order.
    """
    assert conn is not None
    try:
        conn.execute("BEGIN IMMEDIATE")
    except BaseException:
        return [outcome for item in batch for outcome in run_one(conn, item)]
    outcomes: list[Outcome] = []
    GROUPING.active = True
    try:
        for at, (job, _, future, _) in enumerate(batch):
            conn.execute("SAVEPOINT hermes_job")
            try:
                outcomes.append((future, job(conn), None))
                conn.execute("RELEASE hermes_job")
                continue
            except BaseException as exc:
                outcomes.append((future, None, exc))
                if conn.in_transaction:
                    conn.execute("ROLLBACK TO hermes_job")
                    conn.execute("RELEASE hermes_job")
                    continue
            # SQLite rolled the whole transaction back (e.g. disk full): the jobs before
            # this one are undone too, and the rest run one transaction each.
            forget()
            lost = outcomes[-1][2]
            outcomes = [(f, None, lost) for f, _, _ in outcomes]
            GROUPING.active = False
            for item in batch[at + 1 :]:
                outcomes.extend(run_one(conn, item))
            return outcomes
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        forget()
        return [(item[2], None, exc) for item in batch]
    finally:
        GROUPING.active = False
    return outcomes
