"""The model page's speed by class comes from the read model `ModelClassSummary`
(docs/champions.md §Read models): one row per class, equal to what the benchmark table says,
kept right by the recompute after a flag, and read in one query whatever the number of
benchmarks."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchtools.reads import load_benchmarks
from board.model_summaries import summary_fields
from board.models import Benchmark, BenchModel, ModelClassSummary
from board.selectors import catalog as selectors
from board.services import flag_benchmark

# In-process, rolled back, its commits in autocommit's order (tests/inprocess.py).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("board_in_process")]


def expected_speed(model: BenchModel) -> list[tuple]:
    """The rule in its plainest form, straight from the published benchmarks."""
    published = list(Benchmark.objects.public().filter(model=model))
    rows = []
    for class_id in {b.hardware_class_id for b in published}:
        mine = [b for b in published if b.hardware_class_id == class_id]
        ranked = [b for b in mine if b.ranked]
        pool = ranked or mine

        def best(name, lowest, pool=pool):
            found = [b for b in pool if getattr(b, name) is not None]
            if not found:
                return None
            value = (min if lowest else max)(getattr(b, name) for b in found)
            tied = [b for b in found if getattr(b, name) == value]
            # the tables' order: the latest submitted first (one not submitted before all)
            tied.sort(key=lambda b: (b.submitted_at is None, b.submitted_at, b.pk), reverse=True)
            return tied[0].public_id

        latest = max((b.submitted_at for b in mine if b.submitted_at), default=None)
        rows.append(
            (
                latest,
                class_id,
                bool(ranked),
                len(mine),
                best("peak_tps", False),
                best("single_stream_tps", False),
                best("ttft_ms", True),
            )
        )
    rows.sort(key=lambda row: (row[0] is None, -(row[0].timestamp() if row[0] else 0), row[1]))
    return [row[1:] for row in rows]


def shown_speed(model: BenchModel) -> list[tuple]:
    return [
        (
            row["cls"].pk,
            row["ranked"],
            row["count"],
            *(getattr(row[key], "public_id", None) for key in ("peak", "single", "latency")),
        )
        for row in selectors.model_speed_by_class(model)
    ]


def test_the_summary_says_what_the_benchmark_table_says_and_follows_a_flag(client):
    load_benchmarks(24)
    models = list(BenchModel.objects.filter(benchmarks__isnull=False).distinct())
    assert len(models) > 1
    for model in models:
        assert shown_speed(model) == expected_speed(model), model.canonical_id

    # Flag the class-best peak of the model with the most benchmarks: it stops ranking, the
    # recompute rewrites the summary, and the next best takes the cell.
    model = max(models, key=lambda m: m.benchmarks.count())
    before = selectors.model_speed_by_class(model)
    holder = next(row["peak"] for row in before if row["ranked"] and row["peak"])
    flag_benchmark(public_id=holder.public_id, flagged=True, note="test")
    after = shown_speed(model)
    assert after == expected_speed(model)
    assert holder.public_id not in {row[3] for row in after if row[1]}

    page = client.get(f"/models/{model.canonical_id}/")
    assert page.status_code == 200
    assert ModelClassSummary.objects.filter(model=model).count() == len(after)

    # The models index sums the same rows: its counts are the benchmark table's.
    listed = {m.canonical_id: (m.n_benchmarks, m.n_ranked) for m in selectors.models_with_counts()}
    assert listed == {
        m.canonical_id: (
            Benchmark.objects.public().filter(model=m).count(),
            Benchmark.objects.public().filter(model=m, ranked=True).count(),
        )
        for m in models
    }


def test_speed_by_class_is_one_query_whatever_the_benchmarks():
    load_benchmarks(6)
    model = BenchModel.objects.filter(benchmarks__isnull=False).first()
    with CaptureQueriesContext(connection) as few:
        selectors.model_speed_by_class(model)
    load_benchmarks(30, first=6)
    with CaptureQueriesContext(connection) as many:
        rows = selectors.model_speed_by_class(model)
    assert len(few.captured_queries) == len(many.captured_queries) == 1
    assert (
        sum(row["count"] for row in rows) == Benchmark.objects.public().filter(model=model).count()
    )


def test_ties_go_to_the_latest_submitted_then_the_newest():
    from datetime import UTC, datetime

    early, late = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC)
    rows = [
        {"pk": 1, "ranked": True, "submitted_at": late, "peak_tps": 9.0},
        {"pk": 2, "ranked": True, "submitted_at": early, "peak_tps": 9.0},
        {"pk": 3, "ranked": True, "submitted_at": late, "peak_tps": 9.0},
        {"pk": 4, "ranked": False, "submitted_at": None, "peak_tps": 99.0},
    ]
    for row in rows:
        row |= {"single_stream_tps": None, "ttft_ms": row["peak_tps"]}
    fields = summary_fields(rows)
    assert fields["best_peak_id"] == 3  # among the ranked; the latest, then the newest
    assert fields["best_latency_id"] == 3
    assert fields["best_single_id"] is None
    assert (fields["benchmark_count"], fields["ranked_count"], fields["latest_at"]) == (4, 3, late)
    unranked = [row | {"ranked": False} for row in rows]
    assert summary_fields(unranked)["best_peak_id"] == 4  # none ranks: among all
