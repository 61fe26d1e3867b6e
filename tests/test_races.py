"""Concurrency on PostgreSQL (docs/protocol.md §Transport): the nonce claim, the job_sig dedup, rate limits and
key revocation hold when many requests reach the live (threaded) board at once."""

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from board.models import Result, Run
from demo.podclient import PodClient
from submissions.models import (
    DeviceKey,
    ForgeryEvent,
    KeyAuditEntry,
    KeyStatus,
    RunSession,
    SessionBundle,
    SessionStatus,
)
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
    tampered,
    without_benchmark,
)

pytestmark = [LIVE_DB, pytest.mark.postgres]


def at_once(calls: list, *, workers: int | None = None) -> list:
    """Run the calls on their own threads; with one thread per call they start together."""
    workers = workers or len(calls)
    barrier = threading.Barrier(workers) if workers == len(calls) else None

    def start(call):
        if barrier is not None:
            barrier.wait(timeout=30)
        return call()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(start, calls))


@pytest.mark.parametrize("with_job_sig", [True, False], ids=["job_sig", "no_job_sig"])
def test_twenty_concurrent_finals_of_one_run_commit_it_once(postgres, pod, board_url, with_job_sig):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    extras = {"job_sig": job_sig("race")} if with_job_sig else {}
    body = signed_body(pod, session, small_content(6, **extras))

    answers = at_once([lambda: post_results(pod, session, body)] * 20)

    assert Run.objects.count() == 1
    assert Result.objects.count() == 6
    assert SessionBundle.objects.filter(session__run_id=session.run_id, final=True).count() == 1
    committed = local_answer(board_url, session.run_id, 6)

    def kind(answer) -> str:
        if answer.body == duplicate_answer(session.run_id):
            return "duplicate"
        if answer.status == 200 and without_benchmark(answer) == committed:
            return "committed"
        return f"{answer.status} {answer.body}"

    kinds = Counter(kind(answer) for answer in answers)
    if with_job_sig:
        # The winner is answered as committed, every identical final after it as the duplicate.
        assert kinds == {"committed": 1, "duplicate": 19}
    else:
        # Without job_sig nothing deduplicates: the same bundle again gets the same answer.
        assert kinds == {"committed": 20}
    assert not ForgeryEvent.objects.exists()


def test_two_concurrent_finals_of_one_job_on_two_sessions_commit_once(postgres, pod):
    for attempt in range(3):
        sig = job_sig(f"two-sessions-{attempt}")
        sessions = [pod.open_run(MODEL, TEXT_SUITE, "text") for _ in range(2)]
        bodies = [signed_body(pod, s, small_content(4, job_sig=sig)) for s in sessions]

        answers = at_once(
            [
                lambda s=s, b=b: post_results(pod, s, b)
                for s, b in zip(sessions, bodies, strict=True)
            ]
        )

        assert [a.status for a in answers] == [200, 200], [a.body for a in answers]
        runs = list(Run.objects.filter(job_sig=sig).values_list("run_id", flat=True))
        assert len(runs) == 1
        duplicates = [a.body for a in answers if a.body.get("duplicate")]
        assert duplicates == [duplicate_answer(runs[0])]
        assert RunSession.objects.filter(job_sig=sig, status=SessionStatus.COMMITTED).count() == 1
    assert Run.objects.count() == 3


def test_the_per_ip_rate_limit_admits_exactly_its_count(postgres, board_url, settings):
    settings.AEON_RATE_LIMIT_PER_IP = 37
    settings.AEON_RATE_WINDOW_SECONDS = 3600
    left_in_window = 3600 - time.time() % 3600
    if left_in_window < 15:  # all 100 requests must fall in one window
        time.sleep(left_in_window + 0.5)
    client = PodClient(board_url, timeout=60)

    # A pool below PostgreSQL's connection limit: each request holds a connection.
    answers = at_once([lambda: client.send("GET", "/api/v1/enroll/challenge")] * 100, workers=25)

    statuses = Counter(answer.status for answer in answers)
    assert statuses == {200: 37, 429: 63}
    for answer in answers:
        if answer.status == 429:
            assert answer.body["reason"] == "RATE_LIMITED"
            assert 0 < int(answer.headers["Retry-After"]) <= 3600
        else:
            assert answer.body["challenge"]


def test_concurrent_forgeries_revoke_the_key_exactly_once(postgres, pod):
    sessions = [pod.open_run(MODEL, TEXT_SUITE, "text") for _ in range(12)]
    bodies = [tampered(pod, session, small_content(2)) for session in sessions]

    answers = at_once(
        [lambda s=s, b=b: post_results(pod, s, b) for s, b in zip(sessions, bodies, strict=True)]
    )

    reasons = Counter((a.status, a.body["reason"]) for a in answers)
    assert set(reasons) <= {(400, "BAD_SIG"), (403, "REVOKED_KEY")}, reasons
    key = DeviceKey.objects.get(public_key=pod.public_key)
    assert key.status == KeyStatus.REVOKED
    assert key.audit.filter(action=KeyAuditEntry.Action.REVOKED).count() == 1
    assert ForgeryEvent.objects.filter(key=key).count() == reasons[(400, "BAD_SIG")] >= 5
    assert not Run.objects.exists()


def test_concurrent_finals_of_two_bundles_of_one_job_both_commit(postgres, pod):
    for attempt in range(3):
        group = job_sig(f"group-{attempt}")
        sessions = [pod.open_run(MODEL, TEXT_SUITE, "text") for _ in range(2)]
        bodies = [
            signed_body(
                pod, s, small_content(3, job_sig=job_sig(f"{attempt}-{i}"), job_group=group)
            )
            for i, s in enumerate(sessions)
        ]

        answers = at_once(
            [
                lambda s=s, b=b: post_results(pod, s, b)
                for s, b in zip(sessions, bodies, strict=True)
            ]
        )

        assert [a.status for a in answers] == [200, 200], [a.body for a in answers]
        assert not any(a.body.get("duplicate") for a in answers)
        runs = Run.objects.filter(job_group=group)
        assert runs.count() == 2
        assert len({run.benchmark_id for run in runs}) == 1
