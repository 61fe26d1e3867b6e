"""Model instances from SQL written once, for the few hot statements whose compilation by the ORM
costs more than the query itself (a final's commit: docs/protocol.md §Ingest cost).

`columns(Model, "alias")` lists a model's concrete columns in field order; `take(Model, row,
start)` turns that slice of a fetched row into the instance the ORM would have built: each value
passes the converters the ORM applies (JSON text decoded, SQLite's booleans and datetimes), and
the instance is marked as loaded from this database.
"""

from django.db import connection

_converters: dict[tuple[str, type], list[tuple[object, list]]] = {}
_pk_index: dict[type, int] = {}


def columns(model, alias: str) -> str:
    return ", ".join(f'{alias}."{field.column}"' for field in model._meta.concrete_fields)


def width(model) -> int:
    return len(model._meta.concrete_fields)


def _converters_of(model) -> list[tuple[object, list]]:
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
        _converters[key] = found
    return _converters[key]


def take(model, row, start: int = 0):
    """The instance held in `row[start : start + width(model)]`, or None when its primary key is
    NULL there (a LEFT JOIN that found nothing)."""
    converters = _converters_of(model)
    if model not in _pk_index:
        _pk_index[model] = model._meta.concrete_fields.index(model._meta.pk)
    values = list(row[start : start + len(converters)])
    if values[_pk_index[model]] is None:
        return None
    for index, (column, functions) in enumerate(converters):
        for function in functions:
            values[index] = function(values[index], column, connection)
    return model.from_db(connection.alias, None, values)
