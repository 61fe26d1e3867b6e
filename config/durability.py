"""Writes that need not wait for the database's disk flush (docs/protocol.md, "Evidence and the
ingest log").

A bookkeeping write on the request path (a rate-limit count, the index row of a bundle already
on disk, an ingest-log row, the cache generation) is not worth a disk flush of its own: on
PostgreSQL it commits with `synchronous_commit` off, so a database crash can lose at most the
last fraction of a second of them, never a committed run. The write-ahead log is flushed in
order, so the next ordinary commit (a run's, a quarantine's) makes the earlier ones durable too.

The same holds for a small body kept in its own RawBundle row (`insert_unflushed`): it is
written before anything refers to it, so whatever refers to it (a checkpoint, a run, a
quarantine) commits later with a flush that covers the body's row as well. A crash before that
commit loses the row only with everything that would have referred to it, before any answer:
the pod sends the body again. A body that nothing refers to (a duplicate of a committed job, a
body for a closed run) may be lost in a crash, as its index row could be before.
"""

from django.db import connection

from config import sqlrows

SET_UNFLUSHED = "set_config('synchronous_commit', 'off', true)"


def run_unflushed(statement: str, params=(), *, returning: str = "") -> tuple | None:
    """One statement written once, run as its own transaction that does not wait for its WAL
    flush, through `sqlrows.bound_cursor` (prepared on PostgreSQL, its parameters apart).
    Outside a transaction the setting rides in the statement's RETURNING list: set_config(…,
    true) is SET LOCAL for its implicit transaction, so no second statement is needed (a
    statement that returns no row, an INSERT whose row was there already, writes nothing to
    flush). Inside a transaction the statement simply joins it; other databases run it as is.
    `returning`: the statement's own RETURNING list, whose first row is returned (None
    without one)."""
    unflushed = connection.vendor == "postgresql" and not connection.in_atomic_block
    items = [item for item in (returning, SET_UNFLUSHED if unflushed else "") if item]
    sql = f"{statement} RETURNING {', '.join(items)}" if items else statement
    with sqlrows.bound_cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone() if returning else None
    return row[:-1] if row is not None and unflushed else row  # without the setting's value


def insert_unflushed(table: str, values: dict, *, conflict: str) -> None:
    """`INSERT INTO table … ON CONFLICT (conflict) DO NOTHING` of one row, unflushed as
    `run_unflushed` runs a statement, for values that are large bytes (the setting is made
    before the row is written: a trigger on the table sees it).

    On PostgreSQL the values travel apart from the SQL (server-side binding), bytes as bytes.
    Django's cursors bind on the client: they would send a 0.18 MiB body as 0.36 MiB of hex text
    that the server then decodes (measured here: 3.3 ms for the insert, against 0.6 ms with the
    bytes as a binary parameter). The extended protocol runs one statement per message, so the setting
    rides in the statement itself: set_config(…, true) is SET LOCAL for the implicit transaction
    of this one statement. Inside a transaction the row simply joins it."""
    names = ", ".join(values)
    slots = ", ".join(["%s"] * len(values))
    params = list(values.values())
    ending = f"ON CONFLICT ({conflict}) DO NOTHING"
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {table} ({names}) VALUES ({slots}) {ending}", params)
        return
    if connection.in_atomic_block:
        source = f"VALUES ({slots})"
    else:
        unflushed = "(SELECT set_config('synchronous_commit', 'off', true)) AS unflushed"
        source = f"SELECT {slots} FROM {unflushed}"
    with sqlrows.bound_cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} ({names}) {source} {ending}", params)
