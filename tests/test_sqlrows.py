"""SQL written once for the commit's hot statements (config/sqlrows.py) gives the same instances
as the ORM: a row inserted by `sqlrows.insert` reads back through the ORM as written, and a row
turned into an instance by `sqlrows.take` equals the ORM's read of it, field by field (JSON,
booleans, datetimes, NULLs), on whichever database the suite runs."""

from datetime import UTC, datetime

import pytest
from django.db import connection

from board.models import Benchmark, BenchModel, HardwareClass
from board.services import _locked_benchmark
from config import sqlrows
from recipes.models import Recipe

pytestmark = pytest.mark.django_db


def fields_of(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def a_recipe() -> Recipe:
    return Recipe.objects.create(
        id="r" * 16,
        engine="vllm",
        flags=["--max-model-len", "65536"],
        drafter={"method": "eagle", "n": 3},
        first_seen=datetime(2026, 11, 1, tzinfo=UTC),
    )


def a_benchmark(recipe: Recipe | None) -> Benchmark:
    return Benchmark(
        public_id="0123456789ab",
        key_fingerprint="f" * 16,
        model=BenchModel.objects.create(canonical_id="org/m", hf_repo="org/m", display_name="M"),
        hardware_class=HardwareClass.objects.create(
            slug="test-box", name="Test box", family="other", memory_gb=128.0, unified_memory=True
        ),
        hardware_label="test box",
        weight_set="ab" * 32,
        recipe=recipe,
        created_at=datetime(2026, 11, 30, 12, 34, 56, 789012, tzinfo=UTC),
        complete=True,
        badges=["no_perf", "self_reported"],
        categories=[{"category": "math", "score": 0.5, "n": 3}],
        modalities={"vision": {"score": None, "run_id": "r1"}},
        composite=71.25,
        coverage_ratio=None,
    )


@pytest.mark.parametrize("with_recipe", [True, False])
def test_an_insert_written_once_reads_back_through_the_orm_as_written(with_recipe):
    recipe = a_recipe() if with_recipe else None
    benchmark = a_benchmark(recipe)

    sql, params = sqlrows.insert(benchmark, ignore_conflicts=True)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        sqlrows.saved_as(benchmark, cursor.fetchone()[0])
        cursor.execute(sql, params)  # the same public id again: nothing inserted
        assert cursor.fetchone() is None

    assert not benchmark._state.adding
    assert fields_of(Benchmark.objects.get(pk=benchmark.pk)) == fields_of(benchmark)


@pytest.mark.parametrize("with_recipe", [True, False])
def test_a_row_taken_by_hand_equals_the_orms_read_of_it(with_recipe):
    recipe = a_recipe() if with_recipe else None
    created = a_benchmark(recipe)
    created.save()

    taken = _locked_benchmark(created.pk)
    read = Benchmark.objects.select_related("model", "hardware_class", "recipe").get(pk=created.pk)

    assert fields_of(taken) == fields_of(read)
    assert fields_of(taken.model) == fields_of(read.model)
    assert fields_of(taken.hardware_class) == fields_of(read.hardware_class)
    assert (fields_of(taken.recipe) if taken.recipe else None) == (
        fields_of(read.recipe) if read.recipe else None
    )
    assert taken.badges == ["no_perf", "self_reported"] and taken.complete is True
    assert not taken._state.adding and taken._state.db == "default"
