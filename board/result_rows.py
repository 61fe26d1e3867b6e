"""Writing a run's per-case rows: `insert_results`, the one function both databases go through.

A row is made from the pod's case once (`row_values`: NUL in text becomes U+FFFD and non-finite
floats in JSON become null, as `board.jsonsafe.storable` says, because PostgreSQL refuses them),
then written in bulk: on PostgreSQL by `COPY … FROM STDIN`, elsewhere (SQLite, the embedded
default) by `bulk_create`. tests/test_db_parity.py feeds the same bundles to both and compares
the rows.

Why COPY on PostgreSQL: for the 174 cases of a 0.2 MiB text final, making the rows and Django
composing one 2,088-parameter INSERT that psycopg binds client-side cost 22 ms of CPU; making
them and COPY, 5 ms (medians of 10 inside rolled-back transactions, five rounds each, on this
2-core machine under load) — a sixth of the whole final's worker CPU (about 100 ms), the
largest single piece of it (docs/protocol.md §Ingest cost). A COPY is not one of Django's
queries: `CaptureQueriesContext` does not count it.
"""

import json

from django.db import connection

from board.jsonsafe import NUL_REPLACEMENT, storable
from board.models import Result, Run
from evidence.signing import json_encoder

# Per-case rows per INSERT on the bulk_create way: SQLite takes at most 32,766 parameters.
RESULTS_BATCH = 1000
# The columns written, in the model's order (the primary key is the database's).
_FIELDS = [field for field in Result._meta.concrete_fields if not field.primary_key]
_JSON_FIELDS = {"evidence", "speed", "extras"}
# json.dumps(value, allow_nan=False), its encoder made once: a final's rows are three values
# each (for the 174 rows of a 0.2 MiB final, 1.0 ms against 1.7-3.4 ms, this 2-core machine).
_STRICT_JSON = json_encoder(sort_keys=False, compact=False, allow_nan=False)


def insert_results(run: Run, rows: list[dict]) -> None:
    """Write `rows` (the pod's cases, in order) as the run's results, inside the caller's
    transaction."""
    values = [row_values(run, position, row) for position, row in enumerate(rows)]
    if connection.vendor == "postgresql":
        _copy(values)
        return
    for row in values:
        row.update({name: storable(row[name]) for name in _JSON_FIELDS})
    Result.objects.bulk_create([Result(**row) for row in values], batch_size=RESULTS_BATCH)


def row_values(run: Run, position: int, row: dict) -> dict:
    """One case as the Result's field values (by attribute name); the JSON ones as the pod sent
    them, made storable by the way that writes them."""
    tier, score, creativity = row.get("tier"), row.get("score"), row.get("creativity")
    return {
        "run_id": run.pk,
        "position": position,
        "case_id": _text(row["case_id"]),
        "category": _text(row.get("category") or ""),
        "tier": int(tier) if isinstance(tier, int) else None,
        "status": _text(row["status"]),
        "score": None if score is None else float(score),
        "creativity": None if creativity is None else float(creativity),
        "raw_output": (row.get("raw_output") or "").encode("utf-8"),
        "evidence": row.get("evidence"),
        "speed": row.get("speed"),
        "extras": {k: v for k, v in row.items() if k not in Result.ROW_FIELDS},
    }


def _text(value):
    return value.replace("\x00", NUL_REPLACEMENT) if isinstance(value, str) else value


def _copy(values: list[dict]) -> None:
    columns = ", ".join(connection.ops.quote_name(field.column) for field in _FIELDS)
    table = connection.ops.quote_name(Result._meta.db_table)
    # psycopg's own cursor, under Django's error wrapper: a failure is a django.db error, as
    # the ORM's would be (the commit answers 503 for an OperationalError, docs/protocol.md).
    with connection.cursor() as cursor, connection.wrap_database_errors:
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in values:
                for name in _JSON_FIELDS:
                    row[name] = _json_text(row[name])
                copy.write_row([row[field.attname] for field in _FIELDS])


def _json_text(value) -> str | None:
    """JSON as COPY's text format takes it (SQL NULL for None, as Django's JSONField stores
    it). Most values hold neither NUL nor a non-finite float: they are dumped once, and only the
    others go through `storable` (a NUL in any string or key shows as the escape \\u0000)."""
    if value is None:
        return None
    try:
        text = _STRICT_JSON(value)
    except ValueError:
        return json.dumps(storable(value))
    return json.dumps(storable(value)) if "\\u0000" in text else text
