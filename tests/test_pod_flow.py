"""The pod channel end to end (docs/protocol.md §Routes): a pod with a real key enrolls, opens sessions,
sends checkpoints and finals to the live board over HTTP, and reads back what was stored."""

import json

import pytest

from board.models import Result, Run
from demo.bundles import DEMO_MODELS, job_bundles, text_checkpoints
from submissions.models import (
    CheckpointRow,
    DeviceKey,
    ForgeryEvent,
    IngestLogEntry,
    KeyAuditEntry,
    RunSession,
    SessionBundle,
    SessionStatus,
)
from tests.inprocess import pod_client
from tests.podchannel import (
    MODEL,
    TEXT_SUITE,
    UNREACHABLE_HUB,
    committed_answer,
    duplicate_answer,
    job_sig,
    local_answer,
    post_results,
    raw_request,
    read_run,
    read_run_results,
    sha256,
    signed_body,
    small_content,
    without_benchmark,
)

ROW_FIELDS = (
    "case_id",
    "category",
    "tier",
    "status",
    "score",
    "creativity",
    "raw_output",
    "evidence",
    "speed",
)
TEXT_CASES = 174
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def hub_unreachable(settings):
    """The weight check runs at commit and defers: demo runs stay `pending`."""
    settings.AEON_HF_ENDPOINT = UNREACHABLE_HUB


def demo_job(model_index: int = 0) -> list[tuple[str, str, str, dict]]:
    """(board, suite_id, model, bundle) of one comprehensive demo job."""
    return job_bundles(DEMO_MODELS[model_index])


def stored_rows(pod, run_id: str) -> list[dict]:
    return [{name: row[name] for name in ROW_FIELDS} for row in read_run_results(pod, run_id)]


def sent_rows(rows: list[dict]) -> list[dict]:
    return [{name: row.get(name) for name in ROW_FIELDS} for row in rows]


def test_it_enrolls_a_key_and_answers_a_re_enrolment_with_its_fingerprint(board_url):
    pod = pod_client(board_url, timeout=60)
    fingerprint = sha256(pod.public_key.encode("ascii"))[:16]
    expected = {"ok": True, "fingerprint": fingerprint, "status": "active"}

    first, again = pod.enroll(), pod.enroll()

    assert (first.status, first.body) == (200, expected)
    assert (again.status, again.body) == (200, expected)
    key = DeviceKey.objects.get(public_key=pod.public_key)
    assert (key.fingerprint, key.status) == (fingerprint, "active")
    assert list(key.audit.values_list("action", flat=True)) == [KeyAuditEntry.Action.ENROLLED]


def test_a_challenge_is_single_use(board_url):
    pod = pod_client(board_url, timeout=60)
    challenge = pod.send("GET", "/api/v1/enroll/challenge").body["challenge"]
    request = pod.enroll_request(challenge)

    assert pod.post_json("/api/v1/enroll", request).status == 200
    reused = pod.post_json("/api/v1/enroll", request)

    assert reused.status == 400
    assert reused.reason == "CHALLENGE_INVALID"


def test_it_records_a_text_run_sent_through_cumulative_checkpoints(pod, board_url):
    board, suite_id, model, content = demo_job()[0]
    checkpoints = text_checkpoints(content)
    assert (board, suite_id) == ("text", TEXT_SUITE)
    assert len(checkpoints) == 21 and len(content["results"]) == TEXT_CASES
    session = pod.open_run(model, suite_id, board)

    for number, checkpoint in enumerate(checkpoints, start=1):
        answer = pod.submit(session, checkpoint, final=False)
        assert (answer.status, answer.body) == (
            200,
            {"ok": True, "run_id": session.run_id, "final": False, "n_results": 8 * number},
        )
    running = RunSession.objects.get(run_id=session.run_id)
    assert running.status == SessionStatus.RUNNING
    assert running.checkpoints == 21
    assert running.nonce == session.run_nonce
    assert running.last_progress_at is not None
    assert CheckpointRow.objects.filter(session=running).count() == 168
    assert not Run.objects.exists()
    sig = content["job_sig"]
    assert pod.job_status(sig).body == {"exists": False, "run_id": None, "status": None}

    final = pod.submit(session, content, final=True)

    assert final.status == 200
    assert without_benchmark(final) == committed_answer(board_url, session.run_id, TEXT_CASES)
    run = Run.objects.get(run_id=session.run_id)
    assert (run.model_name, run.suite_id, run.board) == (model, TEXT_SUITE, "text")
    assert (run.job_sig, run.job_group) == (sig, content["job_group"])
    assert run.n_results == Result.objects.filter(run=run).count() == TEXT_CASES
    assert RunSession.objects.get(run_id=session.run_id).status == SessionStatus.COMMITTED
    stored = read_run(pod, session.run_id)
    assert stored.status == 200
    assert stored.body["n_results"] == TEXT_CASES
    assert stored_rows(pod, session.run_id) == sent_rows(content["results"])
    assert pod.job_status(sig).body == {
        "exists": True,
        "run_id": session.run_id,
        "status": "committed",
    }


def test_the_first_write_of_a_case_wins(pod):
    rows = small_content(4)["results"]
    session = pod.open_run("my-local-model", None, "god")  # suite_id may be null
    first = [rows[0] | {"score": 1.0, "raw_output": "first"}]
    rewritten = [rows[0] | {"score": 0.0, "raw_output": "second"}, rows[1]]
    final_rows = [rows[0] | {"score": 0.5, "raw_output": "final"}, *rows[1:]]

    assert pod.submit(session, {"results": first}, final=False).body["n_results"] == 1
    assert pod.submit(session, {"results": rewritten}, final=False).body["n_results"] == 2
    answer = pod.submit(session, {"results": final_rows}, final=True)

    assert answer.status == 200 and answer.body["n_results"] == 4
    run = Run.objects.get(run_id=session.run_id)
    assert (run.model_name, run.suite_id, run.board) == ("my-local-model", None, "god")
    result = Result.objects.get(run__run_id=session.run_id, case_id=rows[0]["case_id"])
    assert (result.score, result.raw_text) == (1.0, "first")
    stored = read_run(pod, session.run_id).body["results"]
    assert [row["case_id"] for row in stored] == [row["case_id"] for row in rows]
    assert stored[0]["score"] == 1.0


def test_checkpointed_rows_are_stored_as_sent_whatever_their_text_spells(pod):
    """The checkpointed rows' stored text is reused for the results' INSERT unless it may
    spell a NaN or an infinity; rows that do, or hold a NUL, are stored as before."""
    rows = small_content(6)["results"]
    rows[0] |= {"raw_output": "NaN and -Infinity are only words here"}
    rows[1] |= {"speed": {"ttft_ms": float("nan"), "e2e_ms": float("inf")}}
    rows[2] |= {"raw_output": "a\x00b", "evidence": {"note": "c\x00d"}}
    rows[3] |= {"evidence": {"checkers": [{"type": "x", "satisfied": True}]}, "tier": 2}
    stored_as = {
        rows[1]["case_id"]: {"speed": {"ttft_ms": None, "e2e_ms": None}},
        rows[2]["case_id"]: {"evidence": {"note": "c\ufffdd"}},  # raw output is kept as bytes
    }
    for special in rows[:3]:  # words only; a NaN and an infinity; a NUL
        checkpoint_rows = [special, rows[3]]
        final_rows = [*checkpoint_rows, rows[4], rows[5]]
        session = pod.open_run("my-local-model", None, "god")
        assert pod.submit(session, {"results": checkpoint_rows}, final=False).status == 200
        assert pod.submit(session, {"results": final_rows}, final=True).status == 200

        stored = Result.objects.filter(run__run_id=session.run_id).order_by("position")
        assert [
            {
                "case_id": result.case_id,
                "tier": result.tier,
                "score": result.score,
                "raw_output": result.raw_text,
                "evidence": result.evidence,
                "speed": result.speed,
            }
            for result in stored
        ] == [
            {
                "case_id": row["case_id"],
                "tier": row.get("tier"),
                "score": row.get("score"),
                "raw_output": row.get("raw_output") or "",
                "evidence": row.get("evidence"),
                "speed": row.get("speed"),
            }
            | stored_as.get(row["case_id"], {})
            for row in final_rows
        ]


def test_it_records_the_other_bundles_of_a_comprehensive_job(pod, board_url):
    job = demo_job(0)[1:]
    audio = [entry for entry in demo_job(3) if entry[0] == "audio"]
    assert [entry[0] for entry in job + audio] == [
        "text",
        "text",
        "text",
        "vision",
        "video",
        "perf",
        "audio",
    ]

    for board, suite_id, model, content in job + audio:
        session = pod.open_run(model, suite_id, board)
        answer = pod.submit(session, content, final=True)
        n = len(content["results"])
        assert answer.status == 200, (board, answer.body)
        assert without_benchmark(answer) == committed_answer(board_url, session.run_id, n)
        run = Run.objects.get(run_id=session.run_id)
        assert (run.board, run.suite_id, run.model_name) == (board, suite_id, model)
        assert (run.job_sig, run.job_group) == (content["job_sig"], content["job_group"])
        assert stored_rows(pod, session.run_id) == sent_rows(content["results"]), board
        assert pod.job_status(content["job_sig"]).body == {
            "exists": True,
            "run_id": session.run_id,
            "status": "committed",
        }

    assert Run.objects.filter(job_group=job[0][3]["job_group"]).count() == 6
    harnesses = Run.objects.filter(suite_id="aeon-agentic-v2.5").values_list(
        "extras__harness", flat=True
    )
    assert sorted(harnesses) == ["hermes", "openclaw", "opencode"]
    agentic = Run.objects.get(extras__harness="hermes")
    sent_artifacts = job[0][3]["artifacts"]
    assert all("html" not in item for item in agentic.extras["artifacts"])
    assert [item["has_html"] for item in agentic.extras["artifacts"]] == [
        bool(item["html"]) for item in sent_artifacts
    ]


def test_job_status_refuses_a_sig_that_is_not_1_to_64_hex(pod):
    for bad_sig in ("xyz", "a" * 65, "12-4", "abc%20"):
        answer = pod.job_status(bad_sig)

        assert answer.status == 400, bad_sig
        assert answer.body == {
            "error": "SCHEMA_INVALID",
            "reason": "SCHEMA_INVALID",
            "note": answer.body["note"],
        }
    assert pod.job_status("a" * 64).body == {"exists": False, "run_id": None, "status": None}


def test_job_status_ignores_case_and_running_sessions(pod):
    sig = job_sig("text-case")
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    pod.submit(session, small_content(2, job_sig=sig), final=False)

    assert pod.job_status(sig).body["exists"] is False
    pod.submit(session, small_content(3, job_sig=sig), final=True)
    assert pod.job_status(sig.upper()).body == {
        "exists": True,
        "run_id": session.run_id,
        "status": "committed",
    }


def test_a_job_already_committed_by_the_key_is_answered_as_a_duplicate(pod):
    sig = job_sig("perf")
    first = pod.open_run(MODEL, "aeon-perf-v1", "perf")
    committed = pod.submit(first, demo_job()[-1][3] | {"job_sig": sig})
    assert committed.status == 200 and "duplicate" not in committed.body
    second = pod.open_run(MODEL, TEXT_SUITE, "text")

    answer = pod.submit(second, small_content(5, job_sig=sig))

    assert (answer.status, answer.body) == (200, duplicate_answer(first.run_id))
    assert list(Run.objects.values_list("run_id", flat=True)) == [first.run_id]
    assert not SessionBundle.objects.filter(session__run_id=second.run_id).exists()
    assert RunSession.objects.get(run_id=second.run_id).status == SessionStatus.OPEN
    assert not ForgeryEvent.objects.exists()  # honest drift never counts against the key


def test_another_key_with_the_same_job_sig_is_not_a_duplicate(pod, make_pod):
    sig = job_sig("shared")
    other = make_pod()
    mine = pod.open_run(MODEL, TEXT_SUITE, "text")
    theirs = other.open_run(MODEL, TEXT_SUITE, "text")

    assert "duplicate" not in pod.submit(mine, small_content(2, job_sig=sig)).body
    answer = other.submit(theirs, small_content(2, job_sig=sig))

    assert answer.status == 200 and "duplicate" not in answer.body
    assert Run.objects.filter(job_sig=sig).count() == 2


def test_an_identical_re_send_of_a_committed_final_is_answered_as_a_duplicate(pod, board_url):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = signed_body(pod, session, small_content(3, job_sig=job_sig("resend")))

    first = post_results(pod, session, body)
    again = post_results(pod, session, body)

    assert without_benchmark(first) == local_answer(board_url, session.run_id, 3)
    assert (again.status, again.body) == (200, duplicate_answer(session.run_id))
    assert Run.objects.count() == 1
    assert Result.objects.count() == 3


def test_an_identical_re_send_without_job_sig_gets_the_same_answer_again(pod, board_url):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = signed_body(pod, session, small_content(3))

    first = post_results(pod, session, body)
    again = post_results(pod, session, body)

    assert without_benchmark(first) == local_answer(board_url, session.run_id, 3)
    assert (again.status, again.body) == (200, first.body)
    assert Run.objects.count() == 1


def test_a_commit_supersedes_the_running_sessions_of_the_same_job(pod):
    sig = job_sig("text-restarted")
    stalled = pod.open_run(MODEL, TEXT_SUITE, "text")
    other_job = pod.open_run(MODEL, TEXT_SUITE, "text")
    restarted = pod.open_run(MODEL, TEXT_SUITE, "text")
    assert pod.submit(stalled, small_content(2, job_sig=sig), final=False).status == 200
    pod.submit(other_job, small_content(2, job_sig=job_sig("other")), final=False)

    answer = pod.submit(restarted, small_content(4, job_sig=sig))

    assert answer.status == 200 and "duplicate" not in answer.body
    statuses = dict(RunSession.objects.values_list("run_id", "status"))
    assert statuses == {
        stalled.run_id: SessionStatus.SUPERSEDED,
        other_job.run_id: SessionStatus.RUNNING,
        restarted.run_id: SessionStatus.COMMITTED,
    }
    late = pod.submit(stalled, small_content(4, job_sig=sig))
    assert (late.status, late.body) == (200, duplicate_answer(restarted.run_id))
    assert list(Run.objects.values_list("run_id", flat=True)) == [restarted.run_id]


JSON_ERRORS = [
    ("GET", "/api/v1/no-such-route", 404),
    ("POST", "/api/v1/no-such-route", 404),
    ("GET", "/api/v1/runs", 405),
    ("GET", "/api/v1/enroll", 405),
    ("POST", "/api/v1/enroll/challenge", 405),
    ("GET", "/api/v1/runs/some-run/results", 405),
    ("PUT", "/api/v1/runs/some-run/results", 405),
    ("DELETE", "/api/v1/jobs/abc", 405),
    ("GET", "/api/v1/runs/no-such-run", 404),
    ("POST", "/api/v1/runs/no-such-run", 405),
]


def test_every_api_answer_is_json_errors_included(board_url):
    for method, path, status in JSON_ERRORS:
        body = b"{}" if method != "GET" else b""
        answer = raw_request(
            board_url,
            method,
            path,
            body,
            {"Content-Type": "application/json", "Content-Length": str(len(body))},
        )

        where = f"{method} {path}"
        assert answer.status == status, where
        assert answer.headers["Content-Type"].startswith("application/json"), where
        reason = "NOT_FOUND" if status == 404 else "METHOD_NOT_ALLOWED"
        assert answer.body == {"error": reason, "reason": reason, "note": answer.body["note"]}
        if status == 405:
            assert answer.headers["Allow"], where


def test_pod_routes_never_redirect_to_a_trailing_slash(pod):
    payload = json.dumps(pod.open_run_request(MODEL, TEXT_SUITE, "text")).encode()

    for path in ("/api/v1/runs/", "/api/v1/enroll/", "/api/v1/runs/some-run/results/"):
        answer = raw_request(
            pod.base_url,
            "POST",
            path,
            payload,
            {"Content-Type": "application/json", "Content-Length": str(len(payload))},
        )

        assert answer.status == 404, path
        assert "Location" not in answer.headers
        assert answer.body["reason"] == "NOT_FOUND"
    assert not RunSession.objects.exists()
    assert (
        pod.post_json("/api/v1/runs", pod.open_run_request(MODEL, TEXT_SUITE, "text")).status == 200
    )


def test_it_caps_the_open_sessions_of_a_key(pod, make_pod, settings):
    settings.AEON_MAX_OPEN_RUNS_PER_KEY = 3
    sessions = [pod.open_run(MODEL, TEXT_SUITE, "text") for _ in range(3)]
    request = pod.open_run_request(MODEL, TEXT_SUITE, "text")

    refused = pod.post_json("/api/v1/runs", request)

    assert refused.status == 429
    assert refused.body["reason"] == "TOO_MANY_OPEN_RUNS"
    assert refused.body["error"] == "TOO_MANY_OPEN_RUNS"
    assert int(refused.headers["Retry-After"]) > 0
    assert RunSession.objects.count() == 3
    assert make_pod().open_run(MODEL, TEXT_SUITE, "text").run_id  # other keys are not capped
    pod.submit(sessions[0], small_content(2))
    assert pod.post_json("/api/v1/runs", request).status == 200


def test_every_accepted_attempt_leaves_an_ingest_log_row(pod):
    fingerprint = DeviceKey.objects.get(public_key=pod.public_key).fingerprint
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    content = small_content(4)
    checkpoint = signed_body(
        pod, session, content | {"results": content["results"][:2]}, final=False
    )
    final = signed_body(pod, session, content)

    assert post_results(pod, session, checkpoint).status == 200
    assert post_results(pod, session, final).status == 200

    log = IngestLogEntry.objects.order_by("created_at", "pk")
    assert [(e.route, e.status, e.reason) for e in log] == [
        ("enroll", 200, "OK"),
        ("enroll", 200, "OK"),
        ("open_run", 200, "OK"),
        ("results", 200, "OK"),
        ("results", 200, "OK"),
    ]
    assert {e.key_fingerprint for e in log} == {fingerprint}
    assert {e.client_ip for e in log} == {"127.0.0.1"}
    opened, first, last = log[2], log[3], log[4]
    assert opened.run_id == first.run_id == last.run_id == session.run_id
    assert (first.bytes, first.bundle_sha256) == (len(checkpoint), sha256(checkpoint))
    assert (last.bytes, last.bundle_sha256) == (len(final), sha256(final))
