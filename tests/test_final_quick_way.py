"""A final's quick way on PostgreSQL (submissions/services.py `_final_rows_first`): in the common
case (signature verifies, not a duplicate, checkpointed rows resent first and unchanged, schema
passes, claim won) the commit's transaction starts at once and the run's rows are written from
the body's own text while the bundle is checked. Anything else rolls that back and is answered
the general way, exactly as before: these tests drive each such case in process, read the
statements the board ran, and check that the quick way was tried and what the answer and the
database hold then."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from board.models import Result, Run
from demo.podclient import PodClient
from submissions.models import (
    ForgeryEvent,
    IngestLogEntry,
    QuarantinedBundle,
    RawBundle,
    RunSession,
)
from tests.podchannel import job_sig, results_path, sha256, signed_body, small_content, tampered
from tests.test_ingest_complexity import open_session

pytestmark = [pytest.mark.postgres]

FROM_THE_BODY = "-> 'bundle' -> 'results'"  # the rows' INSERT of the quick way


def post(client: Client, session, body: bytes):
    return client.post(
        results_path(session.run_id),
        body,
        "application/json",
        HTTP_X_AEON_RUN_TOKEN=session.run_token,
    )


def checkpoint(client: Client, pod: PodClient, session, content: dict) -> None:
    answer = post(client, session, signed_body(pod, session, content, final=False))
    assert answer.status_code == 200, answer.json()


def rows_inserts(queries) -> tuple[int, int]:
    """How many rows' INSERTs took the rows from a body, and how many from a text of rows."""
    inserts = [q["sql"] for q in queries if "INSERT INTO board_result" in (q["sql"] or "")]
    quick = sum(FROM_THE_BODY in sql for sql in inserts)
    return quick, len(inserts) - quick


@pytest.fixture
def client(postgres) -> Client:
    return Client()


def test_a_common_final_writes_its_rows_from_its_body_in_one_go(client):
    pod = PodClient("http://testserver")
    session = open_session(client, pod)
    content = small_content(5)
    checkpoint(client, pod, session, content | {"results": content["results"][:2]})
    body = signed_body(pod, session, content)

    with CaptureQueriesContext(connection) as queries:
        answer = post(client, session, body)

    assert answer.status_code == 200, answer.json()
    assert rows_inserts(queries.captured_queries) == (1, 0)  # the quick way, not fallen back
    run = Run.objects.get(run_id=session.run_id)
    stored = list(
        Result.objects.filter(run=run).order_by("position").values_list("case_id", "raw_output")
    )
    assert [(case, bytes(raw).decode()) for case, raw in stored] == [
        (row["case_id"], row["raw_output"]) for row in content["results"]
    ]
    # The evidence row committed with the run; the session is committed with this body.
    assert bytes(RawBundle.objects.get(sha256=sha256(body)).content) == body
    assert RunSession.objects.get(run_id=session.run_id).final_bundle_sha256 == sha256(body)
    # Its ingest-log row committed with it, once, as the view would have written it after.
    logged = IngestLogEntry.objects.filter(run_id=session.run_id, bundle_sha256=sha256(body))
    assert list(
        logged.values_list("status", "reason", "bytes", "client_ip", "key_fingerprint")
    ) == [(200, "OK", len(body), "127.0.0.1", run.key_fingerprint)]


def test_a_final_that_does_not_resend_its_checkpointed_rows_is_merged_the_general_way(client):
    pod = PodClient("http://testserver")
    session = open_session(client, pod)
    content = small_content(5)
    checkpoint(client, pod, session, content | {"results": content["results"][:3]})

    with CaptureQueriesContext(connection) as queries:
        answer = post(
            client,
            session,
            signed_body(pod, session, content | {"results": content["results"][3:]}),
        )

    assert answer.status_code == 200, answer.json()
    assert rows_inserts(queries.captured_queries) == (1, 1)  # tried, rolled back, merged
    run = Run.objects.get(run_id=session.run_id)
    assert list(
        Result.objects.filter(run=run).order_by("position").values_list("case_id", flat=True)
    ) == [row["case_id"] for row in content["results"]]


def test_a_completion_holding_nul_is_stored_the_general_way_without_loss(client):
    pod = PodClient("http://testserver")
    session = open_session(client, pod)
    content = small_content(3)
    content["results"][1]["raw_output"] = "before\x00after"  # jsonb cannot hold it

    with CaptureQueriesContext(connection) as queries:
        answer = post(client, session, signed_body(pod, session, content))

    assert answer.status_code == 200, answer.json()
    quick, general = rows_inserts(queries.captured_queries)
    assert quick == 1 and general == 0  # the general way copies such rows (COPY, not INSERT)
    raw = Result.objects.get(
        run__run_id=session.run_id, case_id=content["results"][1]["case_id"]
    ).raw_output
    assert bytes(raw) == b"before\x00after"


def test_a_duplicate_final_is_answered_as_a_duplicate_and_writes_nothing(client):
    pod = PodClient("http://testserver")
    sig = job_sig("quick-way duplicate")
    first, second = open_session(client, pod), open_session(client, pod)
    assert (
        post(client, first, signed_body(pod, first, small_content(3, job_sig=sig))).status_code
        == 200
    )

    with CaptureQueriesContext(connection) as queries:
        answer = post(client, second, signed_body(pod, second, small_content(3, job_sig=sig)))

    assert answer.status_code == 200
    assert answer.json()["duplicate"] is True and answer.json()["run_id"] == first.run_id
    assert rows_inserts(queries.captured_queries) == (1, 0)
    assert list(Run.objects.values_list("run_id", flat=True)) == [first.run_id]
    assert Result.objects.count() == 3


def test_a_forged_final_is_refused_counted_once_and_kept(client):
    pod = PodClient("http://testserver")
    session = open_session(client, pod)
    body = tampered(pod, session, small_content(3))

    with CaptureQueriesContext(connection) as queries:
        answer = post(client, session, body)

    assert (answer.status_code, answer.json()["reason"]) == (400, "BAD_SIG")
    assert rows_inserts(queries.captured_queries) == (1, 0)
    assert not Run.objects.exists() and not Result.objects.exists()
    # The general way's side effects, once each: the bundle kept, quarantined, counted.
    assert bytes(RawBundle.objects.get(sha256=sha256(body)).content) == body
    assert QuarantinedBundle.objects.filter(raw_id=sha256(body), reason="BAD_SIG").count() == 1
    assert ForgeryEvent.objects.filter(run_id=session.run_id).count() == 1


def test_a_final_the_schema_refuses_is_quarantined_once_and_not_counted(client):
    pod = PodClient("http://testserver")
    session = open_session(client, pod)
    content = small_content(3)
    content["results"][2]["score"] = 7.0
    body = signed_body(pod, session, content)

    with CaptureQueriesContext(connection) as queries:
        answer = post(client, session, body)

    assert (answer.status_code, answer.json()["reason"]) == (400, "SCHEMA_INVALID")
    assert answer.json()["note"].startswith("/results/2/score")
    # Tried the quick way, then the general way, which checks the schema while its rows are
    # written too: both rolled back.
    assert rows_inserts(queries.captured_queries) == (1, 1)
    assert not Run.objects.exists() and not Result.objects.exists()
    assert (
        QuarantinedBundle.objects.filter(raw_id=sha256(body), reason="SCHEMA_INVALID").count() == 1
    )
    assert not ForgeryEvent.objects.exists()
    assert RunSession.objects.get(run_id=session.run_id).status == "open"
