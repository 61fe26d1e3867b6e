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
COLUMNS = (
    "schema_version",
    "id",
    "url",
    "model",
    "hardware_class",
    "hardware_class_name",
    "hardware_label",
    "pod",
    "trust",
    "verification",
    "complete",
    "ranked",
    "badges",
    "composite",
    "coverage",
    "peak_aggregate_tps",
    "peak_aggregate_cohort",
    "single_stream_tps",
    "single_stream_cohort",
    "ttft_ms",
    "tpot_ms",
    "latency_cohort",
    "context_len",
    "recipe_id",
    "submitted_at",
)


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


def _row(benchmark) -> dict:
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


def _csv_cell(value) -> str:
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
        row = _row(benchmark)
        yield writer.writerow([_csv_cell(row[column]) for column in COLUMNS])


def _json_chunks(rows, filters: dict) -> Iterator[str]:
    header = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": timezone.now().isoformat(),
        "filters": filters,
    }
    yield json.dumps(header)[:-1] + ', "benchmarks": ['
    first = True
    for benchmark in rows:
        row = _row(benchmark)
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
