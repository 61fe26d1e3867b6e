"""Writes that need not wait for the database's disk flush (docs/protocol.md, "Evidence and the
ingest log").

A bookkeeping write on the request path (a rate-limit count, the index row of a bundle already
on disk, an ingest-log row, the cache generation) is not worth a disk flush of its own: on
PostgreSQL it commits with `synchronous_commit` off, so a database crash can lose at most the
last fraction of a second of them, never a committed run. The write-ahead log is flushed in
order, so the next ordinary commit (a run's, a quarantine's) makes the earlier ones durable too.
"""

from django.db import connection


def execute_unflushed(cursor, sql: str, params=None) -> None:
    """Execute one statement as its own transaction that does not wait for its WAL flush.

    On PostgreSQL, outside a transaction, `SET LOCAL` rides in the same query string, which
    PostgreSQL runs as one implicit transaction (one round trip; a RETURNING result is read as
    usual). Inside a transaction the statement simply joins it; other databases run it as is."""
    if connection.vendor == "postgresql" and not connection.in_atomic_block:
        sql = f"{sql}; SET LOCAL synchronous_commit TO OFF"
    cursor.execute(sql, params)
