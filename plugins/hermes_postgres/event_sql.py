"""The event log's write as a server-side function (schema version 4).

``hermes_write_event_chunks`` applies a batch of conditional chunk writes (docs/plugin-hooks.md#the-event-log)
in the one statement that calls it, so in that statement's transaction: per write, in order, it
takes the session's log lock (a transaction-scoped advisory lock, so two writers of one log queue
up instead of both reading the same end), checks the writer lease when the caller holds one (a
former holder's writes are refused, as its row writes are), compares the log's end with the
write's ``after``, deletes what a replacing write replaces and inserts the chunk. It answers one
boolean per write: written, or refused (lease moved, end moved). A chunk that would not follow
the log's end raises (``raise_exception``; nothing of the batch is kept).

A PL/pgSQL function is VOLATILE by default: each statement in it takes a fresh snapshot (under
READ COMMITTED), so the end read after the lock sees what the previous holder of the lock
committed, as the former statement-by-statement transaction did.
"""

from __future__ import annotations

from functools import cache

#: The first key of the two-key advisory locks on event logs ("HEVL"); the second is the hash
#: of the session id. Two-key locks never collide with the one-key migration lock.
LOG_LOCK_CLASS = 0x4845564C

WRITE_CHUNKS_FUNCTION = f"""
CREATE OR REPLACE FUNCTION hermes_write_event_chunks(
    sids text[], afters bigint[], replace_from bigint[], firsts bigint[], lasts bigint[],
    datas bytea[], owners text[], epochs bigint[]
) RETURNS boolean[] LANGUAGE plpgsql AS $fn$
DECLARE
    written boolean[] := '{{}}';
    tail bigint;
BEGIN
    FOR i IN 1 .. coalesce(array_length(sids, 1), 0) LOOP
        PERFORM pg_advisory_xact_lock({LOG_LOCK_CLASS}, hashtext(sids[i]));
        IF owners[i] IS NOT NULL THEN
            PERFORM 1 FROM hermes_leases
                WHERE session_id = sids[i] AND owner = owners[i] AND epoch = epochs[i] FOR SHARE;
            IF NOT FOUND THEN
                written := written || false;
                CONTINUE;
            END IF;
        END IF;
        tail := coalesce((SELECT last_seq FROM hermes_event_chunks WHERE session_id = sids[i]
                          ORDER BY last_seq DESC LIMIT 1), 0);
        IF tail <> afters[i] THEN
            written := written || false;
            CONTINUE;
        END IF;
        IF replace_from[i] IS NOT NULL THEN
            DELETE FROM hermes_event_chunks
                WHERE session_id = sids[i] AND last_seq >= replace_from[i] AND first_seq >= replace_from[i];
            tail := coalesce((SELECT last_seq FROM hermes_event_chunks WHERE session_id = sids[i]
                              ORDER BY last_seq DESC LIMIT 1), 0);
        END IF;
        IF firsts[i] <= tail THEN
            RAISE EXCEPTION 'event log write for session % refused: first_seq % does not follow %',
                sids[i], firsts[i], tail;
        END IF;
        INSERT INTO hermes_event_chunks (session_id, first_seq, last_seq, data)
            VALUES (sids[i], firsts[i], lasts[i], datas[i]);
        written := written || true;
    END LOOP;
    RETURN written;
END
$fn$
"""

#: The SQL types of the function's eight arrays (one entry per write).
WRITE_CHUNKS_TYPES = ("text", "bigint", "bigint", "bigint", "bigint", "bytea", "text", "bigint")


@cache
def write_chunks_sql(arrays: tuple[str, ...]) -> str:
    """One call of the function, given its eight array expressions (:mod:`hermes_postgres.inline`)."""
    return f"SELECT hermes_write_event_chunks({', '.join(arrays)})"
