"""The board as data to take away (docs/lab.md §Data to take away): the ranked board, the cohorts
of its perf runs and the recipes it used, as Parquet (pyarrow) and CSV, versioned.

`write_dataset()` reads the three tables once, writes each file's bytes to the evidence store
under its sha256 and records the export as a `DatasetExport` row; the beat runs it on a schedule
(`board.tasks.export_dataset`), `manage.py export_dataset` on demand. Downloads read the bytes back
from the store: every process of a deployment serves the same files."""

from __future__ import annotations

import csv
import io
import json

from django.conf import settings
from django.db.models import F, Max
from django.utils import timezone

from board.exports import BENCHMARK_COLUMNS, benchmark_row, csv_cell
from board.models import BoardGeneration, DatasetExport, PerfCohort
from board.selectors import benchmarks as benchmark_reads
from board.services import bump_generation

SCHEMA_VERSION = "aeon-board-dataset/1"
FORMATS = {"parquet": "application/vnd.apache.parquet", "csv": "text/csv; charset=utf-8"}
LICENCE = "CC BY 4.0"

# Column → (pyarrow type, unit or meaning): the datasheet page is written from these (the
# benchmarks table's are the CSV and JSON export's, board/exports.py).
COHORT_COLUMNS: dict[str, tuple[str, str]] = {
    "benchmark_id": ("string", "the benchmark (benchmarks.id)"),
    "run_id": ("string", "the perf run"),
    "category": ("string", "prompt category"),
    "conc": ("int64", "concurrent streams"),
    "label": ("string", "category @ concurrency"),
    "aggregate_tps": ("double", "aggregate decode, tok/s"),
    "per_stream_tps": ("double", "aggregate ÷ streams, tok/s"),
    "decode_tps_mean": ("double", "mean per-stream decode, tok/s"),
    "ttft_ms_p50": ("double", "TTFT median, ms"),
    "tpot_ms_p50": ("double", "TPOT median, ms"),
    "n": ("int64", "requests"),
    "n_errors": ("int64", "failed requests"),
    "valid": ("bool", "counts for peaks (docs/cohorts.md)"),
    "marks": ("list<item: string>", "why a cohort is excluded (CSV: joined by ;)"),
}
RECIPE_COLUMNS: dict[str, tuple[str, str]] = {
    "recipe_id": ("string", "sha256 of the recipe's canonical JSON"),
    "engine": ("string", "serving engine"),
    "image": ("string", "container image offered (empty when off the allowlist)"),
    "image_digest": ("string", "its digest"),
    "flags": ("list<item: string>", "scrubbed serve flags (CSV: JSON array)"),
    "drafter_method": ("string", "speculative method, empty for none"),
    "drafter_repo": ("string", "drafter's Hugging Face repo"),
    "drafter_n": ("int64", "draft tokens"),
    "context_len": ("int64", "context, tokens"),
    "benchmarks": ("int64", "ranked benchmarks that used it"),
}
COLUMNS = {"benchmarks": BENCHMARK_COLUMNS, "cohorts": COHORT_COLUMNS, "recipes": RECIPE_COLUMNS}


def ranked_benchmarks():
    """The rows of the ranked board as the read API and its CSV export filter them
    (`?ranked=1`), in the export's order."""
    return benchmark_reads.benchmarks(ranked="1").order_by(
        "hardware_class__slug", "-peak_tps", "public_id"
    )


def _benchmark_rows() -> list[dict]:
    return [benchmark_row(b) for b in ranked_benchmarks().iterator(chunk_size=500)]


def _cohort_rows() -> list[dict]:
    cohorts = (
        PerfCohort.objects.filter(
            run__benchmark__ranked=True,
            run__benchmark__withheld=False,
            run__run_id=F("run__benchmark__perf_run_id"),
        )
        .order_by("run__benchmark__public_id", "category", "conc")
        .values_list(
            "run__benchmark__public_id",
            "run__run_id",
            "category",
            "conc",
            "label",
            "aggregate_tps",
            "decode_tps_mean",
            "ttft_ms_p50",
            "tpot_ms_p50",
            "n",
            "n_errors",
            "valid",
            "marks",
        )
    )
    rows = []
    for (
        bid,
        run_id,
        cat,
        conc,
        label,
        agg,
        decode,
        ttft,
        tpot,
        n,
        errors,
        valid,
        marks,
    ) in cohorts.iterator(chunk_size=2000):
        rows.append(
            {
                "benchmark_id": bid,
                "run_id": run_id,
                "category": cat,
                "conc": conc,
                "label": label,
                "aggregate_tps": agg,
                "per_stream_tps": agg / conc if conc else None,
                "decode_tps_mean": decode,
                "ttft_ms_p50": ttft,
                "tpot_ms_p50": tpot,
                "n": n,
                "n_errors": errors,
                "valid": valid,
                "marks": [str(m) for m in marks or []],
            }
        )
    return rows


def _recipe_rows() -> list[dict]:
    from django.db.models import Count

    from recipes.models import Recipe

    used = (
        Recipe.objects.filter(benchmarks__ranked=True, benchmarks__withheld=False)
        .annotate(uses=Count("benchmarks"))
        .order_by("id")
    )
    rows = []
    for recipe in used:
        public = recipe.public_json()
        drafter = recipe.drafter if isinstance(recipe.drafter, dict) else {}
        n = drafter.get("n")
        rows.append(
            {
                "recipe_id": recipe.id,
                "engine": recipe.engine,
                "image": public["image"] or "",
                "image_digest": public["image_digest"] or "",
                "flags": [str(f) for f in recipe.flags],
                "drafter_method": str(drafter.get("method") or ""),
                "drafter_repo": str(drafter.get("repo") or ""),
                "drafter_n": n if isinstance(n, int) and not isinstance(n, bool) else None,
                "context_len": recipe.context_len,
                "benchmarks": recipe.uses,
            }
        )
    return rows


def _arrow_type(kind: str):
    """A column's Arrow type from the name the datasheet shows (`str()` of the type)."""
    import pyarrow as pa

    if kind == "list<item: string>":
        return pa.list_(pa.string())
    return pa.type_for_alias(kind)


def _parquet(rows: list[dict], columns: dict, version: int) -> bytes:
    # pyarrow is imported here, when a file is written, not with the URLs: it adds ~39 MB of RSS to
    # every web process that never writes one (tests/test_token_before_body.py bounds a worker's
    # growth at 16 MiB).
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [pa.field(name, _arrow_type(kind)) for name, (kind, _) in columns.items()],
        metadata={"schema_version": SCHEMA_VERSION, "export_version": str(version)},
    )
    table = pa.Table.from_pylist(
        [{name: row.get(name) for name in columns} for row in rows], schema=schema
    )
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def _csv(rows: list[dict], columns: dict) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(list(columns))
    for row in rows:
        writer.writerow(
            [
                json.dumps(row[name]) if name == "flags" else csv_cell(row.get(name))
                for name in columns
            ]
        )
    return out.getvalue().encode("utf-8")


def write_dataset() -> DatasetExport:
    """Read the three tables, store each file in the evidence store, record the export."""
    from evidence.blobstore import blob_store, sha256_hex

    generation = BoardGeneration.objects.filter(pk=1).values_list("number", flat=True).first()
    tables = {
        "benchmarks": _benchmark_rows(),
        "cohorts": _cohort_rows(),
        "recipes": _recipe_rows(),
    }
    version = (DatasetExport.objects.aggregate(top=Max("version"))["top"] or 0) + 1
    store = blob_store()
    files = {}
    for name, rows in tables.items():
        for fmt, media_type in FORMATS.items():
            data = (
                _parquet(rows, COLUMNS[name], version)
                if fmt == "parquet"
                else _csv(rows, COLUMNS[name])
            )
            digest = store.put(data, digest=sha256_hex(data))
            files[f"{name}.{fmt}"] = {
                "sha256": digest,
                "bytes": len(data),
                "rows": len(rows),
                "media_type": media_type,
            }
    export = DatasetExport.objects.create(
        version=version,
        schema_version=SCHEMA_VERSION,
        created_at=timezone.now(),
        generation=generation,
        files=files,
    )
    bump_generation()  # the datasheet page names the latest export
    return export


def latest_export() -> DatasetExport | None:
    return DatasetExport.objects.order_by("-version").first()


def export_file(export: DatasetExport, name: str) -> tuple[bytes, dict] | None:
    from evidence.blobstore import blob_store

    entry = export.files.get(name)
    if entry is None:
        return None
    return blob_store().get(entry["sha256"]), entry


def site_url() -> str:
    return settings.AEON_SITE_URL.rstrip("/")
