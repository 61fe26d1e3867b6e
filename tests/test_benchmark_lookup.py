"""Attaching a run to its benchmark reads only the benchmarks that could be it (docs/protocol.md
§Ingest cost): the key's job group, or the key's latest of one model on one class. Hundreds of
other pods' benchmarks sharing the same recipe and weight set are never read. On PostgreSQL the
lookup runs as the commit runs it, a prepared statement with one generic plan, and the plan's
scans of the benchmark table are counted row by row."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction

from board.models import Benchmark, BenchmarkGroup, BenchModel, HardwareClass, Run
from board.services import BenchmarkIdentity, _BenchmarkLookup, _lookup_sql
from recipes.models import Recipe

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
WEIGHTS = "ab" * 32
OTHERS = 300  # other pods' benchmarks with the same recipe, weights, model and class


@pytest.fixture
def crowd(postgres):
    model = BenchModel.objects.create(canonical_id="org/m", hf_repo="org/m", display_name="m")
    box = HardwareClass.objects.create(slug="box", name="Box", family="other")
    recipe = Recipe.objects.create(id="r" * 16, engine="vllm")

    def benchmark(key: str, public_id: str, created_at: datetime) -> Benchmark:
        return Benchmark(
            public_id=public_id,
            key_fingerprint=key,
            model=model,
            hardware_class=box,
            hardware_label="box",
            weight_set=WEIGHTS,
            recipe=recipe,
            created_at=created_at,
        )

    others = Benchmark.objects.bulk_create(
        benchmark(f"other{i:011d}", f"o{i:011d}", NOW - timedelta(minutes=i)) for i in range(OTHERS)
    )
    BenchmarkGroup.objects.bulk_create(
        BenchmarkGroup(key_fingerprint=b.key_fingerprint, job_group="job", benchmark=b)
        for b in others
    )
    grouped = benchmark("mine000000000001", "mine00000001", NOW - timedelta(hours=1))
    grouped.save()
    BenchmarkGroup.objects.create(
        key_fingerprint="mine000000000001", job_group="job", benchmark=grouped
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {"grouped": grouped, "recipe": recipe}


def a_run(key: str, job_group: str) -> Run:
    return Run(
        run_id="lookup0000000001",
        key_fingerprint=key,
        board="text",
        suite_id="aeon-suite-v4",
        harness="",
        job_group=job_group,
        committed_at=NOW,
    )


def benchmark_rows_read(sql: str, params: list) -> int:
    """Rows of board_benchmark the prepared statement's generic plan reads (kept or filtered)."""
    numbered, count = "", 0
    for piece in sql.split("%s")[:-1]:
        count += 1
        numbered += f"{piece}${count}"
    numbered += sql.split("%s")[-1]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE lookup_plan AS {numbered}")
        arguments = ", ".join(["%s"] * len(params))
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE lookup_plan({arguments})", params)
        plan = cursor.fetchone()[0]
        cursor.execute("DEALLOCATE lookup_plan")
    plan = json.loads(plan) if isinstance(plan, str) else plan
    read = 0
    nodes = [plan[0]["Plan"]]
    while nodes:
        node = nodes.pop()
        nodes.extend(node.get("Plans", []))
        if node.get("Relation Name") == Benchmark._meta.db_table:
            loops = node.get("Actual Loops", 1)
            read += node.get("Actual Rows", 0) * loops + node.get("Rows Removed by Filter", 0)
            read += node.get("Rows Removed by Index Recheck", 0)
    return read


def lookup_params(run: Run, recipe_id: str) -> list:
    """The parameters `_BenchmarkLookup.send` passes, captured from the statement it runs."""
    seen = []

    def capture(execute, sql, params, many, context):
        seen.append(list(params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        _BenchmarkLookup.send(
            run,
            run.job_group,
            "org/m",
            "box",
            BenchmarkIdentity(WEIGHTS, recipe_id),
            "pub000000001",
        )()
    return seen[0]


def test_the_job_groups_benchmark_is_found_reading_only_it(crowd):
    run = a_run("mine000000000001", "job")
    found = _BenchmarkLookup.send(
        run, "job", "org/m", "box", BenchmarkIdentity(WEIGHTS, crowd["recipe"].pk), "pub000000001"
    )()

    assert found.existing_id == crowd["grouped"].pk
    assert (found.model.canonical_id, found.hardware_class.slug) == ("org/m", "box")
    read = benchmark_rows_read(_lookup_sql(True, True), lookup_params(run, crowd["recipe"].pk))
    assert read <= 4, f"{read} benchmark rows read among {OTHERS + 1} sharing the recipe"


def test_a_resumed_job_finds_the_keys_latest_benchmark_reading_only_the_keys(crowd):
    run = a_run("mine000000000001", "second-group")
    found = _BenchmarkLookup.send(
        run,
        "second-group",
        "org/m",
        "box",
        BenchmarkIdentity(WEIGHTS, crowd["recipe"].pk),
        "pub000000001",
    )()

    assert (found.existing_id, found.resumed_id) == (None, crowd["grouped"].pk)
    read = benchmark_rows_read(_lookup_sql(True, True), lookup_params(run, crowd["recipe"].pk))
    assert read <= 4, f"{read} benchmark rows read among {OTHERS + 1} sharing the recipe"
