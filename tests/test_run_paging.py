"""Large runs are read a page at a time (docs/website.md §Reading a run and
§Bundles to download): the run API and the case-by-case page cost the same queries on every page
whatever the run holds, a page holds at most its size, and walking the pages yields every case
once, in order; the public copy streams a batch of cases at a time and the signed original
streams from the evidence store in bounded blocks; both carry an ETag that answers 304.

Runs are uploaded through the real pod protocol; the queries are counted, never timed."""

import hashlib
import json
import re
import tracemalloc

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from board.models import Result, Run
from board.selectors import runs as selectors
from board.services import bump_generation
from submissions.pages import BUNDLE_BLOCK, PUBLIC_COPY_BATCH, PUBLIC_COPY_BATCH_BYTES
from tests.podchannel import MODEL, TEXT_SUITE, small_content

pytestmark = pytest.mark.django_db

SMALL, LARGE = 130, 520  # cases of the two runs compared: four times the rows


def submit(pod, count: int, **extras) -> tuple[str, list[str]]:
    """A committed local-weights run of `count` cases: its id and its case ids in order."""
    content = small_content(count, **extras)
    answer = pod.submit_run(MODEL, TEXT_SUITE, "text", content)
    assert answer.status == 200, answer.body
    return answer.body["run_id"], [row["case_id"] for row in content["results"]]


def counted(client, path: str, **headers):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path, **headers)
    return response, len(captured.captured_queries)


def walk_api(client, run_id: str, page_size: int) -> tuple[list[str], set[int], list[dict]]:
    """Every page of a run's results by following `next`: case ids, query counts, the pages."""
    path, ids, queries, pages = f"/api/v1/runs/{run_id}?page_size={page_size}", [], set(), []
    while path:
        response, n = counted(client, path)
        assert response.status_code == 200, (path, response.content[:300])
        body = response.json()
        assert len(body["results"]) <= page_size
        ids += [row["case_id"] for row in body["results"]]
        queries.add(n)
        pages.append(body["results_page"])
        path = body["results_page"]["next"]
    return ids, queries, pages


def test_the_run_api_reads_a_page_at_a_time_with_the_same_queries_on_every_page(pod, client):
    small, small_ids = submit(pod, SMALL)
    large, large_ids = submit(pod, LARGE)

    walked_small, small_queries, _ = walk_api(client, small, 50)
    walked_large, large_queries, pages = walk_api(client, large, 50)

    # Every case once, in position order.
    assert walked_small == small_ids and walked_large == large_ids
    # One query count for every page of both runs, four times the rows apart.
    assert len(small_queries | large_queries) == 1, (small_queries, large_queries)
    assert len(pages) == 11
    assert pages[0] == {
        "page": 1,
        "page_size": 50,
        "pages": 11,
        "count": LARGE,
        "next": f"/api/v1/runs/{large}?page_size=50&page=2",
        "previous": None,
    }
    assert pages[-1]["previous"] == f"/api/v1/runs/{large}?page_size=50&page=10"
    assert pages[-1]["next"] is None

    # Walking back from the last page meets the same pages.
    last = client.get(f"/api/v1/runs/{large}?page=11&page_size=50").json()
    back = client.get(last["results_page"]["previous"]).json()
    assert [r["case_id"] for r in back["results"]] == large_ids[450:500]

    # The page size has a default and a cap.
    assert len(client.get(f"/api/v1/runs/{large}").json()["results"]) == 50
    capped = client.get(f"/api/v1/runs/{large}?page_size=100000").json()
    assert len(capped["results"]) == 200 and capped["results_page"]["page_size"] == 200
    assert capped["results_page"]["pages"] == 3


def test_a_page_that_is_not_one_is_refused_in_json(pod, client):
    run_id, _ = submit(pod, 3)
    for query, status, reason in (
        ("page=0", 400, "BAD_REQUEST"),
        ("page=abc", 400, "BAD_REQUEST"),
        ("page=-1", 400, "BAD_REQUEST"),
        ("page_size=0", 400, "BAD_REQUEST"),
        ("page=%D9%A3", 400, "BAD_REQUEST"),  # an Arabic-Indic 3: a digit, not an ASCII one
        ("page=99999999999999999999", 400, "BAD_REQUEST"),
        ("page=2", 404, "NOT_FOUND"),
    ):
        response = client.get(f"/api/v1/runs/{run_id}?{query}")
        assert response.status_code == status, query
        assert response.json()["reason"] == reason, query
    only = client.get(f"/api/v1/runs/{run_id}?page=1").json()
    assert only["results_page"] | {"next": 1} == {
        "page": 1,
        "page_size": 50,
        "pages": 1,
        "count": 3,
        "next": 1,
        "previous": None,
    }
    assert only["results_page"]["next"] is None


def test_a_page_of_cases_is_read_in_order_from_the_position_index(postgres, pod):
    """PostgreSQL's plan of a page, with sorting and sequential scans priced out of reach: a plan
    that still sorts, or reads another index, would cost more as the run grows."""
    run_id, ids = submit(pod, SMALL)
    run = Run.objects.get(run_id=run_id)
    with CaptureQueriesContext(connection) as captured:
        page = selectors.run_results_page(run, 2, 50)
    assert [r.case_id for r in page.object_list] == ids[50:100]
    (query,) = captured.captured_queries
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + query["sql"])
        found = "\n".join(row[0] for row in cursor.fetchall())
    assert "Sort" not in found and "result_run_position" in found, found


CASE_LINK = re.compile(r'href="\?case=([^"#]+)#cases"')


def test_the_case_by_case_page_reads_a_page_at_a_time(pod, client):
    small, small_ids = submit(pod, SMALL)
    large, large_ids = submit(pod, LARGE)
    counts = set()
    for run_id, ids in ((small, small_ids), (large, large_ids)):
        seen: list[str] = []
        number = 1
        while True:
            bump_generation()  # a miss: the page is read from the database and rendered
            response, n = counted(client, f"/runs/{run_id}/?page={number}")
            assert response.status_code == 200
            html = response.content.decode()
            found = CASE_LINK.findall(html)
            assert 0 < len(found) <= 25
            seen += found
            counts.add(n)
            if 'rel="next"' not in html:
                break
            number += 1
        assert seen == ids
    assert len(counts) == 1, counts
    # One category and one case: a count and a page, whatever the run holds.
    bump_generation()
    response = client.get(f"/runs/{large}/?case={large_ids[-1]}")
    assert CASE_LINK.findall(response.content.decode()) == [large_ids[-1]]


def test_the_public_copy_streams_a_batch_of_cases_at_a_time_with_an_etag(pod, client):
    run_id, ids = submit(pod, LARGE)
    response, before = counted(client, f"/runs/{run_id}/public.json")
    assert response.status_code == 200 and response.streaming
    assert before == 1  # the run, before the status line; its cases are read as it streams
    with CaptureQueriesContext(connection) as streamed:
        body = b"".join(response.streaming_content)
    # Per 200 cases: their output lengths, then the cases (small ones: one batch).
    assert len(streamed.captured_queries) == 2 * -(-LARGE // PUBLIC_COPY_BATCH)
    copy = json.loads(body)
    assert copy["schema"] == "aeon-public-bundle-v1"
    assert [row["case_id"] for row in copy["run"]["results"]] == ids
    detail = client.get(f"/api/v1/runs/{run_id}?page_size=200").json()
    assert copy["run"]["results"][:200] == detail["results"]
    assert {k: v for k, v in copy["run"].items() if k != "results"} == {
        k: v for k, v in detail.items() if k not in ("results", "results_page")
    }
    etag = response["ETag"]
    assert response["Cache-Control"] == "public, max-age=300"
    assert "attachment" in response["Content-Disposition"]

    again, queries = counted(client, f"/runs/{run_id}/public.json", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and not again.streaming
    assert queries == 1  # the run only: no case is read
    assert again["ETag"] == etag

    # The copy changes when the run's public record does: so does its ETag.
    Run.objects.filter(run_id=run_id).update(verification_note="re-checked")
    changed = client.get(f"/runs/{run_id}/public.json", HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag


def test_the_public_copy_holds_a_few_huge_answers_a_batch_at_a_time(pod, client):
    """Batches are cut by model output too: ten answers of 1 MB go two by two (2 MiB a batch),
    not all ten at once. (The answers are made 1 MB in their rows after the upload.)"""
    run_id, ids = submit(pod, 10)
    huge = "x" * 1_000_000
    Result.objects.filter(run__run_id=run_id).update(raw_output=huge.encode())
    response = client.get(f"/runs/{run_id}/public.json")
    with CaptureQueriesContext(connection) as streamed:
        chunks = list(response.streaming_content)
    assert len(streamed.captured_queries) == 1 + 5  # the lengths, then five batches of two
    assert PUBLIC_COPY_BATCH_BYTES == 2 * 1024 * 1024
    assert max(len(chunk) for chunk in chunks) < 2.1 * 1_000_000
    rows = json.loads(b"".join(chunks))["run"]["results"]
    assert [row["case_id"] for row in rows] == ids
    assert all(row["raw_output"] == huge for row in rows)


def traced_peak(read) -> int:
    """The peak of Python's allocations while `read()` runs (the request served in-process)."""
    tracemalloc.start()
    try:
        read()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def consumed(response) -> None:
    """Read a response to its end without keeping it, as a client saving to disk does. The test
    client closes a response once it is read (a streamed one at its end); closing it again would
    send request_finished, which closes a connection held in a rolled-back transaction."""
    assert response.status_code == 200
    for _ in response.streaming_content if response.streaming else [response.content]:
        pass


def test_memory_per_request_follows_the_page_not_the_run(pod, client):
    """A page of the run API and the whole public copy of a run four times larger cost about
    the same memory: a page, a batch — never the run. The cases are made 40 KB each in their
    rows after the upload (to spare the machine a 16 MB ingest), so a batch of the copy is capped
    by its bytes (PUBLIC_COPY_BATCH_BYTES): the runs stream in 2 and 8 batches."""
    padding = "lorem ipsum dolor sit amet " * 1500  # ~40 KB a case
    per_batch = PUBLIC_COPY_BATCH_BYTES // len(padding)
    small, _ = submit(pod, 2 * per_batch)
    large, _ = submit(pod, 8 * per_batch)
    for run_id in (small, large):
        Result.objects.filter(run__run_id=run_id).update(raw_output=padding.encode())
    peaks = {}
    for run_id in (small, large):
        for path in (f"/api/v1/runs/{run_id}?page_size={per_batch}", f"/runs/{run_id}/public.json"):
            consumed(client.get(path))  # warm: imports and caches are not the request's cost
            kind = "api" if path.startswith("/api/") else "copy"
            peaks[kind, run_id] = traced_peak(lambda path=path: consumed(client.get(path)))
    for kind in ("api", "copy"):
        assert peaks[kind, large] < 1.5 * peaks[kind, small], peaks


def test_the_signed_original_streams_from_the_store_in_bounded_blocks(pod, client, settings):
    settings.AEON_INLINE_EVIDENCE_BYTES = 0  # to the evidence store, as every large bundle goes
    content = small_content(40)
    for row in content["results"]:
        row["raw_output"] += "lorem ipsum dolor sit amet " * 4000  # ~108 KB a case, ~4 MiB in all
    answer = pod.submit_run(MODEL, TEXT_SUITE, "text", content)
    assert answer.status == 200, answer.body
    run_id = answer.body["run_id"]
    digest = client.get(f"/api/v1/runs/{run_id}").json()["bundle_sha256"]
    moderator = get_user_model().objects.create_user("moderator", password="x" * 12, is_staff=True)
    assert client.get(f"/runs/{run_id}/bundle.json").status_code == 404  # not for the public
    client.force_login(moderator)

    tracemalloc.start()
    try:
        response = client.get(f"/runs/{run_id}/bundle.json")
        assert response.status_code == 200 and response.streaming
        sizes, whole = [], hashlib.sha256()
        for chunk in response.streaming_content:
            sizes.append(len(chunk))
            whole.update(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()  # the test client closed the response at its end (consumed)

    total = sum(sizes)
    assert total > 4_000_000 and whole.hexdigest() == digest
    assert max(sizes) <= BUNDLE_BLOCK and len(sizes) >= total // BUNDLE_BLOCK
    # Python's allocations while the whole bundle was served: a few blocks, not the bundle.
    assert peak < total / 8, (peak, total)
    assert response["ETag"] == f'"{digest}"'
    assert response["Cache-Control"] == "private, max-age=31536000, immutable"
    assert response["Content-Length"] == str(total)
    assert response["X-Aeon-Bundle-Sha256"] == digest

    again = client.get(f"/runs/{run_id}/bundle.json", HTTP_IF_NONE_MATCH=f'"{digest}"')
    assert again.status_code == 304 and again["ETag"] == f'"{digest}"'
    other = client.get(f"/runs/{run_id}/bundle.json", HTTP_IF_NONE_MATCH='"0000"')
    assert other.status_code == 200
    consumed(other)  # the test client closes it at its end
    client.logout()
    # The digest does not open the evidence to anyone else.
    anonymous = client.get(f"/runs/{run_id}/bundle.json", HTTP_IF_NONE_MATCH=f'"{digest}"')
    assert anonymous.status_code == 404


@pytest.mark.parametrize("path", ["/api/v1/runs/{}", "/runs/{}/public.json", "/runs/{}/"])
def test_an_unknown_run_is_not_found(client, path):
    assert client.get(path.format("nosuchrun000000")).status_code == 404


def test_the_api_schema_documents_the_pages(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    schema = response.json()
    operation = schema["paths"]["/api/v1/runs/{run_id}"]["get"]
    assert {"page", "page_size"} <= {p["name"] for p in operation["parameters"]}
    ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    shape = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]["properties"]
    assert {"results", "results_page", "n_results"} <= set(shape)
