"""Attaching a run to its benchmark reads only the benchmarks that could be it (docs/protocol.md
§Ingest cost): the key's job group, or the key's latest of one model on one class. Hundreds of
other pods' benchmarks sharing the same recipe and weight set are never read. On PostgreSQL the
plan of each lookup, as the commit runs it, is run with EXPLAIN ANALYZE and its scans of the
benchmark table are counted row by row."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from board.models import Benchmark, BenchmarkGroup, BenchModel, HardwareClass
from board.recording import group_benchmarks, resume_candidates
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


def identity(recipe: Recipe) -> dict:
    return {"weight_set": WEIGHTS, "recipe_id": recipe.pk}


def benchmark_rows_read(queryset) -> int:
    """Rows of board_benchmark the lookup's plan reads (kept or filtered)."""
    plan = queryset.values_list("pk", flat=True)[:1].explain(format="json", analyze=True)
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


def test_the_job_groups_benchmark_is_found_reading_only_it(crowd):
    found = group_benchmarks("mine000000000001", "job", identity(crowd["recipe"]))

    assert found.first() == crowd["grouped"]
    read = benchmark_rows_read(found)
    assert read <= 4, f"{read} benchmark rows read among {OTHERS + 1} sharing the recipe"


def test_a_resumed_job_finds_the_keys_latest_benchmark_reading_only_the_keys(crowd):
    found = resume_candidates(
        "mine000000000001", "org/m", "box", identity(crowd["recipe"]), NOW - timedelta(hours=72)
    )

    assert found.first() == crowd["grouped"]
    read = benchmark_rows_read(found)
    assert read <= 4, f"{read} benchmark rows read among {OTHERS + 1} sharing the recipe"
