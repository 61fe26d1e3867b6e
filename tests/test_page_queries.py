"""Query counts of every public page on a cache miss do not grow with the benchmarks, runs or rows
it shows (docs/champions.md §Cached pages): the board grows from 8 to 80 benchmarks of the read
benchmark's realistic kind, and each page is read uncached at both sizes."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchtools.reads import load_benchmarks
from board.models import Benchmark, Run
from board.services import bump_generation

# In-process, rolled back, its commits in autocommit's order (tests/inprocess.py).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("board_in_process")]

FEW, MANY = 8, 60


def page_paths() -> list[str]:
    """Pages about the first benchmark's class, model and recipe: each gains rows as the board
    grows (the demo lines come round again)."""
    first = Benchmark.objects.select_related("model", "hardware_class").order_by("pk").first()
    other = Benchmark.objects.order_by("pk")[1]
    run = Run.objects.filter(benchmark=first).order_by("pk").first()
    slug = first.hardware_class.slug
    return [
        "/",
        "/?page=2",
        f"/?hardware={slug}&ranked=1",
        f"/?q={first.model.canonical_id.split('/')[-1][:5]}",
        f"/?model={first.model.canonical_id}",
        "/hardware/",
        f"/hardware/{slug}/",
        "/models/",
        f"/models/{first.model.canonical_id}/",
        f"/benchmarks/{first.public_id}/",
        f"/runs/{run.run_id}/",
        f"/compare/?a={first.public_id}&b={other.public_id}",
        "/recipes/",
        f"/recipes/{first.recipe_id}/",
        "/methodology/",
        f"/models/{first.model.canonical_id}/hardware/{slug}/",
        "/lab/",
        "/lab/flags/--max-num-seqs/",
        f"/hardware/{slug}/champions.atom",
        f"/models/{first.model.canonical_id}/benchmarks.atom",
        f"/badges/{first.model.canonical_id}/{slug}.svg",
        "/data/",
    ]


def uncached_counts(client, paths: list[str]) -> dict[str, int]:
    counts = {}
    for path in paths:
        bump_generation()  # a miss: the page is read from the database and rendered
        with CaptureQueriesContext(connection) as captured:
            response = client.get(path)
        if path.startswith("/recipes/") and path != "/recipes/" and response.status_code == 404:
            continue  # the recipe page, where it is not routed (yet)
        assert response.status_code == 200, path
        counts[path] = len(captured.captured_queries)
    return counts


def test_page_query_counts_do_not_grow_from_few_to_many_benchmarks(client):
    load_benchmarks(FEW)
    paths = page_paths()
    first = Benchmark.objects.order_by("pk").first()
    in_class = Benchmark.objects.filter(hardware_class=first.hardware_class)
    of_model = Benchmark.objects.filter(model=first.model)
    before = (in_class.count(), of_model.count())
    few = uncached_counts(client, paths)

    load_benchmarks(MANY - FEW, first=FEW)
    many = uncached_counts(client, paths)

    assert Benchmark.objects.count() == MANY
    assert in_class.count() >= 3 * before[0] and of_model.count() >= 3 * before[1]
    assert many == few
