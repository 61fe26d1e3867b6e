"""Public pages behind the generation cache (docs/champions.md §Cached pages): a page is rendered
once per generation and path, served with an ETag and public Cache-Control, never shared with a
signed-in visitor, never stored with a cookie, and every write that changes what a page shows
(a commit, a finished weight check, moderation, a rebuild) shows on the page at once."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.management import call_command
from django.db import connection
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext

from board import urls as board_urls
from board.answer_cache import cached_page
from board.models import Benchmark
from board.services import bump_generation, flag_benchmark
from board.urls import PAGE_PARAMS
from demo.bundles import DEMO_MODELS, PERF_SUITE_ID
from demo.loader import prefill_hub_cache
from tests.boardjobs import core_job, only, put_on_hub, submit_job

pytestmark = pytest.mark.django_db

MODEL, OTHER = DEMO_MODELS[0], DEMO_MODELS[1]
SPARK = "dgx-spark-x1"


def queries_of(client, path: str, **headers) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path, headers=headers)
    return len(captured.captured_queries), response


def benchmark_id(answers) -> str:
    return answers[0].body["benchmark_id"]


@pytest.fixture
def one_benchmark(pod) -> list:
    prefill_hub_cache()
    return submit_job(pod, core_job(MODEL, started="2026-11-01T10:00:00Z"))


def page_paths(answers) -> list[str]:
    public_id = benchmark_id(answers)
    recipe_id = Benchmark.objects.get(public_id=public_id).recipe_id
    return [
        "/",
        f"/?hardware={SPARK}&ranked=1",
        "/hardware/",
        f"/hardware/{SPARK}/",
        "/models/",
        f"/models/{MODEL.hf_repo.lower()}/",
        f"/benchmarks/{public_id}/",
        f"/runs/{answers[0].body['run_id']}/",
        f"/compare/?a={public_id}&b={public_id}",
        "/recipes/",
        f"/recipes/{recipe_id}/",
        "/methodology/",
        f"/models/{MODEL.hf_repo.lower()}/hardware/{SPARK}/",
        "/lab/",
        "/lab/flags/--max-num-seqs/",
        f"/hardware/{SPARK}/champions.atom",
        f"/models/{MODEL.hf_repo.lower()}/benchmarks.atom",
        f"/badges/{MODEL.hf_repo.lower()}/{SPARK}.svg",
        "/data/",
    ]


def served(client, paths: list[str]) -> dict[str, bytes]:
    """Each page's HTML (the recipe page only where it is routed)."""
    pages = {}
    for path in paths:
        response = client.get(path)
        if path.startswith("/recipes/") and path != "/recipes/" and response.status_code == 404:
            continue
        assert response.status_code == 200, path
        pages[path] = response.content
    return pages


def test_a_page_is_rendered_once_per_generation_and_then_costs_one_query(one_benchmark, client):
    paths = page_paths(one_benchmark)
    first = served(client, paths)

    for path, html in first.items():
        count, again = queries_of(client, path)
        assert (count, again.content) == (1, html), path  # the generation number only
        assert again["ETag"].startswith('"'), path
        assert "public" in again["Cache-Control"] and "max-age=30" in again["Cache-Control"]
        assert "Cookie" in again["Vary"], path
        assert not again.cookies, path
        unchanged = client.get(path, headers={"If-None-Match": again["ETag"]})
        assert (unchanged.status_code, unchanged.content) == (304, b""), path

    bump_generation()
    count, fresh = queries_of(client, "/")
    assert count > 1 and fresh.content == first["/"]  # rendered again, same bytes, same ETag


def test_the_query_string_is_normalised_and_unknown_parameters_are_never_stored(
    one_benchmark, client
):
    stored = client.get(f"/?ranked=1&hardware={SPARK}")

    count, same = queries_of(client, f"/?hardware={SPARK}&q=&ranked=1")
    assert (count, same.content) == (1, stored.content)

    # A parameter the page does not read: served the stored page of the query without it...
    count, other = queries_of(client, f"/?hardware={SPARK}&ranked=1&utm_source=x")
    assert (count, other.content) == (1, stored.content)
    # ... and where none is stored, rendered each time and never stored (its links carry it).
    for _ in range(2):
        count, other = queries_of(client, f"/?hardware={SPARK}&utm_source=x")
        assert count > 1 and other.status_code == 200


def test_a_signed_in_moderator_never_gets_nor_leaves_a_shared_page(one_benchmark, client):
    path = f"/benchmarks/{benchmark_id(one_benchmark)}/"
    public = client.get(path)
    assert (
        b"download the signed bundle" not in public.content and b">download<" not in public.content
    )

    staff = get_user_model().objects.create_user("mod", password="pw-for-tests", is_staff=True)
    moderator = Client()
    moderator.force_login(staff)
    for _ in range(2):
        theirs = moderator.get(path)
        assert b"download" in theirs.content
        assert "private" in theirs["Cache-Control"] and "public" not in theirs["Cache-Control"]

    count, again = queries_of(client, path)
    assert (count, again.content) == (1, public.content)


def test_an_answer_that_sets_a_cookie_or_a_csrf_token_is_never_stored(db):
    from django.middleware.csrf import get_token

    calls = []

    def with_cookie(request):
        calls.append("cookie")
        response = HttpResponse("hello")
        response.set_cookie("seen", "1")
        return response

    def with_csrf(request):
        calls.append("csrf")
        return HttpResponse(f"token {get_token(request)}")

    factory = RequestFactory()
    for view in (cached_page(with_cookie), cached_page(with_csrf)):
        for _ in range(2):
            request = factory.get("/page/")
            request.user = AnonymousUser()
            response = view(request)
            assert response.status_code == 200
            assert "private" in response["Cache-Control"]
    assert calls == ["cookie", "cookie", "csrf", "csrf"]


def test_every_page_route_of_the_board_is_cached():
    """A page added to board/urls.py is put behind the cache by naming it in PAGE_PARAMS."""
    pages = {
        pattern.name: pattern
        for pattern in board_urls.urlpatterns
        if not str(pattern.pattern).startswith("api/")
    }
    assert set(pages) <= set(PAGE_PARAMS), set(pages) - set(PAGE_PARAMS)
    for name, pattern in pages.items():
        assert getattr(pattern.callback, "page_cache_params", None) == set(PAGE_PARAMS[name])


# --- every write that changes what a page shows shows at once ---------------------------------


def changed(client, before: dict[str, bytes]) -> set[str]:
    return {path for path, html in served(client, list(before)).items() if html != before[path]}


def test_a_commit_shows_at_once_on_every_page_it_touches(one_benchmark, pod, client):
    paths = page_paths(one_benchmark)
    before = served(client, paths)

    later = submit_job(pod, core_job(MODEL, started="2026-11-02T10:00:00Z"))

    assert Benchmark.objects.count() == 2
    touched = {"/", f"/?hardware={SPARK}&ranked=1", "/hardware/", f"/hardware/{SPARK}/"}
    touched |= {"/models/", f"/models/{MODEL.hf_repo.lower()}/"}
    touched |= {f"/models/{MODEL.hf_repo.lower()}/hardware/{SPARK}/"}
    touched |= {f"/models/{MODEL.hf_repo.lower()}/benchmarks.atom"}
    assert touched <= changed(client, before)
    assert client.get(f"/benchmarks/{benchmark_id(later)}/").status_code == 200


def test_a_finished_weight_check_shows_at_once(pod, hub, client):
    put_on_hub(hub, MODEL)
    hub.fail_next(MODEL.hf_repo, 503)
    [answer] = submit_job(pod, only(core_job(MODEL), PERF_SUITE_ID))
    assert answer.body["verification"] == "pending"
    paths = [f"/benchmarks/{answer.body['benchmark_id']}/", f"/runs/{answer.body['run_id']}/"]
    paths += ["/", f"/hardware/{SPARK}/"]
    before = served(client, paths)
    assert b"ending" in before[paths[0]]

    call_command("check_weights", "--pending", stdout=io.StringIO())

    assert set(paths) <= changed(client, before)


def test_moderation_shows_at_once(one_benchmark, client):
    public_id = benchmark_id(one_benchmark)
    paths = [f"/benchmarks/{public_id}/", "/", f"/hardware/{SPARK}/"]
    paths += [f"/models/{MODEL.hf_repo.lower()}/"]
    before = served(client, paths)

    flag_benchmark(public_id=public_id, flagged=True, note="looks wrong")

    assert set(paths) <= changed(client, before)


def test_a_rebuild_shows_at_once(one_benchmark, client):
    paths = ["/", f"/hardware/{SPARK}/", "/models/", "/recipes/"]
    full = served(client, paths)
    Benchmark.objects.all().delete()
    bump_generation()  # a write behind the services' back says so itself
    empty = served(client, paths)
    assert set(paths) == {path for path in paths if empty[path] != full[path]}

    call_command("rebuild_board", stdout=io.StringIO())

    assert set(paths) <= changed(client, empty)
    assert served(client, ["/"])["/"].count(MODEL.hf_repo.lower().encode()) >= 1
