"""The public tables (board, class, model, the benchmark list API) read a page of 50 in order
from an index, so a page costs the same at 1,000 and at 100,000 benchmarks (docs/website.md
§Scripts, size and speed). On PostgreSQL the plan of each table query is asked for with sorting and sequential
scans priced out of reach: a plan that still sorts means no index gives the order."""

import pytest
from django.db import connection, transaction

from benchtools.reads import load_benchmarks
from board.models import Benchmark
from board.selectors import benchmarks as selectors


def plan(queryset) -> str:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.fixture
def board(postgres):
    load_benchmarks(6)
    return Benchmark.objects.select_related("model", "hardware_class").order_by("pk").first()


def test_each_table_page_is_read_in_order_from_an_index(board):
    tables = {
        "board": selectors.benchmark_table(),
        "class": selectors.benchmark_table(hardware=board.hardware_class.slug),
        "model page": selectors.benchmark_table(model_id=board.model_id, with_categories=True),
        "api list": selectors.benchmarks(),
        "api by class": selectors.benchmarks(hardware=board.hardware_class.slug),
    }
    for name, queryset in tables.items():
        with transaction.atomic():
            found = plan(queryset[:50])
        assert "Sort" not in found, f"{name} sorts its rows:\n{found}"
        assert "benchmark_public" in found, f"{name} reads no ordering index:\n{found}"
        assert list(queryset[:50]) == sorted(
            queryset[:50], key=lambda b: (b.submitted_at, b.pk), reverse=True
        )


def test_the_class_and_model_filters_keep_their_meaning(board):
    by_class = selectors.benchmark_table(hardware=board.hardware_class.slug)
    assert set(by_class) == set(
        Benchmark.objects.public().filter(hardware_class=board.hardware_class)
    )
    assert not selectors.benchmark_table(hardware="no-such-class").exists()
    by_name = selectors.benchmark_table(model=board.model.canonical_id.upper())
    by_id = selectors.benchmark_table(model_id=board.model_id)
    assert set(by_name) == set(by_id) == set(Benchmark.objects.public().filter(model=board.model))
