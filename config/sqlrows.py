"""Model instances from SQL written once, for the few hot statements whose compilation by the ORM
costs more than the query itself (a final's commit: docs/protocol.md §Ingest cost).

`columns(Model, "alias")` lists a model's concrete columns in field order; `take(Model, row,
start)` turns that slice of a fetched row into the instance the ORM would have built: each value
passes the converters the ORM applies (JSON text decoded, SQLite's booleans and datetimes), and
the instance is marked as loaded from this database.
"""

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper

_converters: dict[tuple[str, type], tuple[int, list[tuple[object, list]]]] = {}


def columns(model, alias: str | None = None) -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(f'{prefix}"{field.column}"' for field in model._meta.concrete_fields)


def width(model) -> int:
    return len(model._meta.concrete_fields)


def _converters_of(model) -> tuple[int, list[tuple[object, list]]]:
    """The primary key's place among the model's columns, and each column's converters."""
    key = (connection.vendor, model)
    if key not in _converters:
        found = []
        for field in model._meta.concrete_fields:
            column = field.get_col(model._meta.db_table)
            found.append(
                (
                    column,
                    connection.ops.get_db_converters(column) + column.get_db_converters(connection),
                )
            )
        _converters[key] = (model._meta.concrete_fields.index(model._meta.pk), found)
    return _converters[key]


def take(model, row, start: int = 0):
    """The instance held in `row[start : start + width(model)]`, or None when its primary key is
    NULL there (a LEFT JOIN that found nothing)."""
    pk_at, converters = _converters_of(model)
    values = list(row[start : start + len(converters)])
    if values[pk_at] is None:
        return None
    db = connections[DEFAULT_DB_ALIAS]  # the wrapper itself: `connection` is a per-thread proxy
    for index, (column, functions) in enumerate(converters):
        for function in functions:
            values[index] = function(values[index], column, db)
    return model.from_db(db.alias, None, values)


_inserts: dict[tuple[str, type, bool, bool, bool], tuple[str, list]] = {}


def insert(
    instance, *, ignore_conflicts: bool = False, returning_row: bool = False, with_pk=None
) -> tuple[str, list]:
    """The INSERT of an unsaved `instance` (primary key left to the database, or `with_pk`) as
    the ORM writes it, RETURNING the primary key (or, `returning_row`, the whole row as stored,
    for `take`), with ON CONFLICT DO NOTHING when asked: the SQL is written once per model, each
    value goes through its field's pre_save and database preparation."""
    model = type(instance)
    given = with_pk is not None
    key = (connection.vendor, model, ignore_conflicts, returning_row, given)
    if key not in _inserts:
        meta = model._meta
        fields = [field for field in meta.local_concrete_fields if given or field is not meta.pk]
        names = ", ".join(connection.ops.quote_name(field.column) for field in fields)
        conflict = " ON CONFLICT DO NOTHING" if ignore_conflicts else ""
        _inserts[key] = (
            f"INSERT INTO {connection.ops.quote_name(meta.db_table)} ({names}) "
            f"VALUES ({', '.join(['%s'] * len(fields))}){conflict} "
            "RETURNING "
            + (columns(model) if returning_row else connection.ops.quote_name(meta.pk.column)),
            fields,
        )
    sql, fields = _inserts[key]
    db = connections[DEFAULT_DB_ALIAS]  # the wrapper itself: `connection` is a per-thread proxy
    if given:
        instance.pk = with_pk
    return sql, [field.get_db_prep_save(field.pre_save(instance, True), db) for field in fields]


def saved_as(instance, pk) -> None:
    """`instance`, inserted by hand, as the ORM leaves a saved one."""
    instance.pk = pk
    instance._state.adding, instance._state.db = False, connection.alias


# psycopg prepares a statement on the server once a cursor from `bound_cursor` has run it this
# many times on one connection: at once (a handful of statements, each run on every final; the
# first final a connection serves is not planned twice). Django's own cursors never prepare.
PREPARE_AFTER = 0


def bound_cursor():
    """A cursor for SQL written once, run on every commit. On PostgreSQL its parameters travel
    apart from the statement (server-side binding): a 0.2 MiB text of rows is neither escaped
    into the SQL nor scanned again by the server's SQL lexer, and psycopg prepares the statement
    on the connection from its first run (PREPARE_AFTER), so the server does not plan it again
    for every final. A statement for it is one statement (no `;`). Elsewhere the usual cursor.
    Queries run through it are seen by execute wrappers and logged like any other."""
    if connection.vendor != "postgresql":
        return connection.cursor()
    from django.db.backends.postgresql.base import ServerBindingCursor

    connection.ensure_connection()
    connection.validate_thread_sharing()
    connection.connection.prepare_threshold = PREPARE_AFTER
    raw = ServerBindingCursor(connection.connection)
    if connection.queries_logged:
        return _LoggedBoundCursor(raw, connection)
    return connection.make_cursor(raw)


class _LoggedBoundCursor(CursorDebugWrapper):
    """Logs each statement as written: its parameters travel apart from it, and psycopg keeps
    no composed text of a prepared statement (Django's debug wrapper would log None)."""

    def execute(self, sql, params=None):
        with self.debug_sql(sql, params, use_last_executed_query=False):
            return CursorWrapper.execute(self, sql, params)
