"""Storage failing under the pod channel (docs/protocol.md §Evidence and the ingest log: "nothing
is lost"): the database failing mid-commit answers 503 UNAVAILABLE, leaves no partial run and keeps
the session open, so the pod's retry of the same final commits once. An unreachable evidence
store: tests/test_blob_stores.py."""

import hashlib

import pytest
from django.db import connection

from board.models import Result, Run
from submissions.models import (
    Challenge,
    DeviceKey,
    IngestLogEntry,
    RawBundle,
    RunSession,
    SessionBundle,
    SessionStatus,
)
from tests.inprocess import pod_client
from tests.podchannel import (
    LIVE_DB,
    MODEL,
    TEXT_SUITE,
    duplicate_answer,
    job_sig,
    local_answer,
    post_results,
    signed_body,
    small_content,
    without_benchmark,
)

pytestmark = [LIVE_DB, pytest.mark.postgres]

FAULT_SQL = f"""
CREATE TABLE aeon_test_fault (note text);
CREATE FUNCTION aeon_test_fail_results() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM aeon_test_fault) THEN
        RAISE EXCEPTION 'injected fault: % refused', TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER aeon_test_fail_results BEFORE INSERT ON {Result._meta.db_table}
    FOR EACH ROW EXECUTE FUNCTION aeon_test_fail_results();
CREATE TRIGGER aeon_test_fail_keys BEFORE UPDATE ON {DeviceKey._meta.db_table}
    FOR EACH ROW EXECUTE FUNCTION aeon_test_fail_results();
"""
CLEANUP_SQL = f"""
DROP TRIGGER IF EXISTS aeon_test_fail_results ON {Result._meta.db_table};
DROP TRIGGER IF EXISTS aeon_test_fail_keys ON {DeviceKey._meta.db_table};
DROP FUNCTION IF EXISTS aeon_test_fail_results();
DROP TABLE IF EXISTS aeon_test_fault;
"""


class ResultsFault:
    """Triggers on the board's results table (an insert) and the device keys (an update) that
    raise while the flag table has a row."""

    def set(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO aeon_test_fault (note) VALUES ('down')")

    def clear(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM aeon_test_fault")


@pytest.fixture
def results_fault(postgres):
    with connection.cursor() as cursor:
        cursor.execute(CLEANUP_SQL)
        cursor.execute(FAULT_SQL)
    try:
        yield ResultsFault()
    finally:
        with connection.cursor() as cursor:
            cursor.execute(CLEANUP_SQL)


def assert_unavailable(answer) -> None:
    assert answer.status == 503, answer.body
    assert answer.body == {
        "error": "UNAVAILABLE",
        "reason": "UNAVAILABLE",
        "note": answer.body["note"],
    }
    assert int(answer.headers["Retry-After"]) > 0
    entry = IngestLogEntry.objects.order_by("-pk").first()
    assert (entry.route, entry.status, entry.reason) == ("results", 503, "UNAVAILABLE")


def assert_nothing_committed(session) -> None:
    assert not Run.objects.exists()
    assert not Result.objects.exists()
    assert not SessionBundle.objects.filter(session__run_id=session.run_id).exists()
    stored = RunSession.objects.get(run_id=session.run_id)
    assert (stored.status, stored.nonce, stored.final_bundle_sha256) == (
        SessionStatus.OPEN,
        session.run_nonce,
        "",
    )


def test_a_database_failure_mid_commit_leaves_no_run_and_the_retry_commits_once(
    results_fault, pod, board_url, blob_dir
):
    sig = job_sig("fault")
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = signed_body(pod, session, small_content(5, job_sig=sig))
    digest = hashlib.sha256(body).hexdigest()
    results_fault.set()

    failed = post_results(pod, session, body)

    assert_unavailable(failed)
    assert_nothing_committed(session)
    assert pod.job_status(sig).body == {"exists": False, "run_id": None, "status": None}
    # The evidence was stored before anything derived, and survives the rollback: a small body
    # in its own row (a bigger one in the blob store: tests/test_inline_evidence.py).
    assert bytes(RawBundle.objects.get(sha256=digest).content) == body
    assert not any(blob_dir.rglob(digest))

    results_fault.clear()
    retried = post_results(pod, session, body)
    again = post_results(pod, session, body)

    assert without_benchmark(retried) == local_answer(board_url, session.run_id, 5)
    assert (again.status, again.body) == (200, duplicate_answer(session.run_id))
    assert list(Run.objects.values_list("run_id", flat=True)) == [session.run_id]
    assert Result.objects.count() == 5
    assert RunSession.objects.get(run_id=session.run_id).status == SessionStatus.COMMITTED


def test_a_database_failure_mid_commit_keeps_the_checkpointed_rows(results_fault, pod, board_url):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    content = small_content(6)
    checkpoint = content | {"results": content["results"][:3]}
    assert pod.submit(session, checkpoint, final=False).body["n_results"] == 3
    results_fault.set()

    assert_unavailable(pod.submit(session, content))
    assert not Run.objects.exists()
    assert RunSession.objects.get(run_id=session.run_id).status == SessionStatus.RUNNING

    results_fault.clear()
    retried = pod.submit(session, content)
    assert without_benchmark(retried) == local_answer(board_url, session.run_id, 6)
    assert Result.objects.count() == 6


def test_a_database_failure_after_the_challenge_is_claimed_leaves_it_for_the_retry(
    results_fault, board_url
):
    # A new key's enrolment fails at its last write (the key's last_seen_at): answered 503, the
    # challenge stays unused and no key is left; the pod's retry of the same body enrolls.
    pod = pod_client(board_url, timeout=60)
    challenge = pod.send("GET", "/api/v1/enroll/challenge").body["challenge"]
    body = pod.enroll_request(challenge)
    results_fault.set()

    failed = pod.post_json("/api/v1/enroll", body)

    assert (failed.status, failed.body["reason"]) == (503, "UNAVAILABLE"), failed.body
    assert int(failed.headers["Retry-After"]) > 0
    assert Challenge.objects.get(value=challenge).used_at is None
    assert not DeviceKey.objects.filter(public_key=pod.public_key).exists()

    results_fault.clear()
    retried = pod.post_json("/api/v1/enroll", body)

    assert (retried.status, retried.body["ok"]) == (200, True), retried.body
    assert Challenge.objects.get(value=challenge).used_at is not None
    assert DeviceKey.objects.filter(public_key=pod.public_key).count() == 1
