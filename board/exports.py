"""Exports of the board: `/api/v1/benchmarks.csv` and `/api/v1/benchmarks.json`.

Both take the read API's filters (hardware, model, trust) and export the ranked board unless
`?ranked=all` (every public benchmark) or `?ranked=0` (the unranked ones). Each row carries the
schema version, so a file read years later says what its columns mean. Rows stream from one
query in chunks: the cost per row is constant and nothing is held whole in memory.
"""

import csv
import itertools
import json
from collections.abc import Iterator

from django.conf import settings
from django.http import StreamingHttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from board.selectors import benchmarks as benchmark_reads

SCHEMA_VERSION = "aeon-board-benchmarks/1"
# The columns of one benchmark, in the export's order, each → (pyarrow type, unit or meaning):
# the CSV and JSON export's, the dataset's benchmarks table (board/datasets.py) and its
# datasheet page are written from these.
BENCHMARK_COLUMNS: dict[str, tuple[str, str]] = {
    "schema_version": ("string", "the export's schema version"),
    "id": ("string", "the benchmark's public id"),
    "url": ("string", "its page"),
    "model": ("string", "canonical model id (Hugging Face repo, lower case)"),
    "hardware_class": ("string", "hardware class slug"),
    "hardware_class_name": ("string", "hardware class name"),
    "hardware_label": ("string", "the label the pod detected"),
    "pod": ("string", "the pod's key fingerprint"),
    "trust": ("string", "attested (every ranked row)"),
    "verification": ("string", "the weight check's verdict"),
    "complete": ("bool", "text and perf runs of the current suites"),
    "ranked": ("bool", "true on every row: the export is the ranked board"),
    "badges": ("list<item: string>", "badge codes (CSV: joined by ;)"),
    "composite": ("double", "quality composite, points 0–100"),
    "coverage": ("string", "answered share of the suite"),
    "peak_aggregate_tps": ("double", "peak aggregate decode, tok/s"),
    "peak_aggregate_cohort": ("string", "the cohort of the peak, category @ concurrency"),
    "single_stream_tps": ("double", "mean decode at concurrency 1, tok/s"),
    "single_stream_cohort": ("string", "5 categories @ c1"),
    "ttft_ms": ("double", "mean TTFT p50 at c1, ms"),
    "tpot_ms": ("double", "mean TPOT p50 at c1, ms"),
    "latency_cohort": ("string", "5 categories @ c1"),
    "context_len": ("int64", "context served, tokens"),
    "recipe_id": ("string", "the recipe (recipes table), sha256"),
    "submitted_at": ("string", "ISO 8601, UTC"),
}
COLUMNS = tuple(BENCHMARK_COLUMNS)


def _queryset(request):
    params = request.GET
    ranked = (params.get("ranked") or "1").lower()
    queryset = benchmark_reads.benchmarks(
        hardware=params.get("hardware") or None,
        model=params.get("model") or None,
        trust=params.get("trust") or None,
        ranked=None if ranked == "all" else ranked,
    )
    return queryset.order_by("hardware_class__slug", "-peak_tps", "public_id")


def benchmark_row(benchmark) -> dict:
    site = settings.AEON_SITE_URL.rstrip("/")
    return {
        "schema_version": SCHEMA_VERSION,
        "id": benchmark.public_id,
        "url": f"{site}/benchmarks/{benchmark.public_id}/",
        "model": benchmark.model.canonical_id,
        "hardware_class": benchmark.hardware_class.slug,
        "hardware_class_name": benchmark.hardware_class.name,
        "hardware_label": benchmark.hardware_label,
        "pod": benchmark.key_fingerprint,
        "trust": benchmark.trust,
        "verification": benchmark.verification,
        "complete": benchmark.complete,
        "ranked": benchmark.ranked,
        "badges": list(benchmark.badges),
        "composite": benchmark.composite,
        "coverage": benchmark.coverage_label or None,
        "peak_aggregate_tps": benchmark.peak_tps,
        "peak_aggregate_cohort": benchmark.peak_cohort or None,
        "single_stream_tps": benchmark.single_stream_tps,
        "single_stream_cohort": benchmark.single_stream_cohort or None,
        "ttft_ms": benchmark.ttft_ms,
        "tpot_ms": benchmark.tpot_ms,
        "latency_cohort": benchmark.latency_cohort or None,
        "context_len": benchmark.context_len,
        "recipe_id": benchmark.recipe_id or None,
        "submitted_at": benchmark.submitted_at.isoformat() if benchmark.submitted_at else None,
    }


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    text = ";".join(value) if isinstance(value, list) else str(value)
    # A cell starting with = + - @ would run as a formula in a spreadsheet: prefix it.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _started(queryset) -> Iterator:
    """The rows, the first of them already fetched: the query runs before the status line, so
    a database that is down is answered 503 (config/middleware.py), never a 200 and a cut body."""
    rows = queryset.iterator(chunk_size=500)
    return itertools.chain(list(itertools.islice(rows, 1)), rows)


def _csv_lines(rows) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(COLUMNS)
    for benchmark in rows:
        row = benchmark_row(benchmark)
        yield writer.writerow([csv_cell(row[column]) for column in COLUMNS])


def _json_chunks(rows, filters: dict) -> Iterator[str]:
    header = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": timezone.now().isoformat(),
        "filters": filters,
    }
    yield json.dumps(header)[:-1] + ', "benchmarks": ['
    first = True
    for benchmark in rows:
        row = benchmark_row(benchmark)
        del row["schema_version"]
        yield ("" if first else ",") + json.dumps(row)
        first = False
    yield "]}"


def _download(chunks, content_type: str, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "public, max-age=60"
    return response


@require_GET
def benchmarks_csv(request):
    return _download(
        _csv_lines(_started(_queryset(request))),
        "text/csv; charset=utf-8",
        "aeon-board-benchmarks.csv",
    )


@require_GET
def benchmarks_json(request):
    filters = {
        key: request.GET[key]
        for key in ("hardware", "model", "trust", "ranked")
        if key in request.GET
    }
    filters.setdefault("ranked", "1")
    return _download(
        _json_chunks(_started(_queryset(request)), filters),
        "application/json",
        "aeon-board-benchmarks.json",
    )
