"""What the pod channel refuses, and what it must accept and keep losslessly (docs/protocol.md
§Status table, §Evidence and the ingest log). Every refusal answers JSON with its reason code, leaves an ingest-log row and
stores no board run."""

import copy
import gzip
import json

import pytest

from board.models import Result, Run
from evidence.blobstore import blob_store
from evidence.signing import canonical_json, key_fingerprint
from submissions import services
from submissions.models import (
    DeviceKey,
    ForgeryEvent,
    KeyAuditEntry,
    KeyStatus,
    QuarantinedBundle,
    RateCounter,
    RawBundle,
    RunSession,
    SessionStatus,
)
from tests.inprocess import pod_client
from tests.podchannel import (
    LIVE_DB,
    MODEL,
    TEXT_SUITE,
    assert_refused,
    local_answer,
    post_results,
    raw_request,
    read_run,
    results_path,
    sha256,
    signed_body,
    small_content,
    tampered,
    without_benchmark,
)

pytestmark = pytest.mark.django_db


def session_of(run_id: str) -> RunSession:
    return RunSession.objects.get(run_id=run_id)


def test_it_quarantines_a_bundle_changed_after_signing(pod):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = tampered(pod, session, small_content(3))

    answer = post_results(pod, session, body)

    entry = assert_refused(answer, 400, "BAD_SIG")
    assert (entry.run_id, entry.bundle_sha256, entry.bytes) == (
        session.run_id,
        sha256(body),
        len(body),
    )
    quarantined = QuarantinedBundle.objects.get()
    assert (quarantined.raw_id, quarantined.run_id, quarantined.reason) == (
        sha256(body),
        session.run_id,
        "BAD_SIG",
    )
    assert session_of(session.run_id).status == SessionStatus.QUARANTINED
    assert list(ForgeryEvent.objects.values_list("reason", flat=True)) == ["BAD_SIG"]
    assert not Run.objects.exists()
    honest_after = pod.submit(session, small_content(3))
    assert_refused(honest_after, 409, "RUN_CLOSED")
    assert not Run.objects.exists()


def test_it_refuses_a_bundle_signed_by_another_enrolled_key(pod, make_pod):
    other = make_pod()
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = signed_body(other, session, small_content(3))

    answer = post_results(pod, session, body)

    assert_refused(answer, 400, "BAD_SIG")
    assert QuarantinedBundle.objects.get().reason == "BAD_SIG"
    assert ForgeryEvent.objects.get().key.public_key == pod.public_key
    assert not Run.objects.exists()


def test_it_refuses_a_missing_or_wrong_token_and_leaves_the_session_untouched(pod, board_url):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    other = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = signed_body(pod, session, small_content(3))

    for token in ("", "not-the-token", other.run_token):
        answer = post_results(pod, session, body, token=token)
        entry = assert_refused(answer, 403, "TOKEN_MISMATCH")
        assert entry.run_id == session.run_id

    assert not Run.objects.exists()
    untouched = session_of(session.run_id)
    assert (untouched.status, untouched.nonce, untouched.checkpoints) == (
        SessionStatus.OPEN,
        session.run_nonce,
        0,
    )
    assert not ForgeryEvent.objects.exists()
    committed = post_results(pod, session, body)
    assert without_benchmark(committed) == local_answer(board_url, session.run_id, 3)


def test_it_answers_404_for_an_unknown_run(pod):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = signed_body(pod, session, small_content(2))

    answer = pod.send(
        "POST", results_path("no-such-run"), body, {"X-Aeon-Run-Token": session.run_token}
    )

    entry = assert_refused(answer, 404, "RUN_NOT_FOUND")
    assert entry.run_id == "no-such-run"
    assert not Run.objects.exists()
    assert session_of(session.run_id).status == SessionStatus.OPEN


def test_it_refuses_to_open_a_run_for_an_unknown_key(board_url):
    stranger = pod_client(board_url, timeout=60)

    answer = stranger.post_json(
        "/api/v1/runs", stranger.open_run_request(MODEL, TEXT_SUITE, "text")
    )

    assert_refused(answer, 403, "UNKNOWN_KEY", route="open_run")
    assert not RunSession.objects.exists()
    assert not DeviceKey.objects.exists()


def test_it_refuses_a_revoked_key_at_enroll_open_and_results(pod):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    key = DeviceKey.objects.get(public_key=pod.public_key)
    assert services.revoke_key_by_moderator(key.pk, reason="leaked key") is True

    assert_refused(pod.enroll(), 403, "REVOKED_KEY", route="enroll")
    opening = pod.post_json("/api/v1/runs", pod.open_run_request(MODEL, TEXT_SUITE, "text"))
    assert_refused(opening, 403, "REVOKED_KEY", route="open_run")
    body = signed_body(pod, session, small_content(3))
    assert_refused(post_results(pod, session, body), 403, "REVOKED_KEY")

    assert RunSession.objects.count() == 1
    assert session_of(session.run_id).status == SessionStatus.QUARANTINED
    assert QuarantinedBundle.objects.get().raw_id == sha256(body)
    assert not Run.objects.exists()
    assert DeviceKey.objects.get(pk=key.pk).status == KeyStatus.REVOKED
    assert key.audit.filter(action=KeyAuditEntry.Action.REVOKED).count() == 1


def test_it_refuses_a_replayed_final_with_a_changed_bundle(pod, board_url):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    content = small_content(3)  # no job_sig: the duplicate check cannot answer first
    first = pod.submit(session, content)
    assert without_benchmark(first) == local_answer(board_url, session.run_id, 3)
    changed = copy.deepcopy(content)
    changed["results"][0]["score"] = 0.0

    answer = pod.submit(session, changed)

    entry = assert_refused(answer, 409, "REPLAY_NONCE")
    assert entry.run_id == session.run_id
    run = Run.objects.get()
    assert (run.run_id, run.n_results) == (session.run_id, 3)
    assert Result.objects.get(run=run, position=0).score == content["results"][0]["score"]
    assert list(ForgeryEvent.objects.values_list("reason", flat=True)) == ["REPLAY_NONCE"]
    assert session_of(session.run_id).status == SessionStatus.COMMITTED


@pytest.mark.parametrize(
    ("field", "reason"), [("run_id", "RUN_ID_MISMATCH"), ("run_nonce", "NONCE_MISMATCH")]
)
def test_it_refuses_a_bundle_naming_another_run(pod, field, reason):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    other = pod.open_run(MODEL, TEXT_SUITE, "text")
    bundle = pod.signed_results(session, small_content(2), final=True)["bundle"]
    bundle[field] = getattr(other, field)
    body = json.dumps({"bundle": bundle, "signature": pod.sign(canonical_json(bundle))}).encode()

    answer = post_results(pod, session, body)

    assert_refused(answer, 409, reason)
    assert session_of(session.run_id).status == SessionStatus.QUARANTINED
    assert session_of(other.run_id).status == SessionStatus.OPEN
    assert QuarantinedBundle.objects.get().reason == reason
    assert not Run.objects.exists()


@LIVE_DB  # a Content-Length other than the body's: only a socket sends it
def test_it_reads_only_the_declared_content_length(pod):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = signed_body(pod, session, small_content(3))
    declared = len(body) // 2

    answer = raw_request(
        pod.base_url,
        "POST",
        results_path(session.run_id),
        body,
        {
            "Content-Type": "application/json",
            "Content-Length": str(declared),
            "X-Aeon-Run-Token": session.run_token,
        },
    )

    entry = assert_refused(answer, 400, "MALFORMED_JSON")
    assert entry.bytes == declared
    assert not Run.objects.exists()
    assert session_of(session.run_id).status == SessionStatus.OPEN


@LIVE_DB  # a Content-Length other than the body's: only a socket sends it
def test_it_refuses_a_declared_length_over_the_cap_before_reading(pod, settings):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = signed_body(pod, session, small_content(3))

    answer = raw_request(
        pod.base_url,
        "POST",
        results_path(session.run_id),
        body,
        {
            "Content-Type": "application/json",
            "Content-Length": str(settings.AEON_MAX_RESULTS_BYTES + 1),
            "X-Aeon-Run-Token": session.run_token,
        },
    )

    assert_refused(answer, 413, "SIZE_EXCEEDED")
    assert not Run.objects.exists()
    assert session_of(session.run_id).status == SessionStatus.OPEN


def test_it_refuses_a_body_over_the_cap_and_accepts_it_again_under_it(pod, settings, board_url):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = signed_body(pod, session, small_content(20))
    settings.AEON_MAX_RESULTS_BYTES = len(body) - 1

    answer = post_results(pod, session, body)

    entry = assert_refused(answer, 413, "SIZE_EXCEEDED")
    assert entry.run_id == session.run_id
    assert not Run.objects.exists()
    assert session_of(session.run_id).status == SessionStatus.OPEN
    settings.AEON_MAX_RESULTS_BYTES = len(body)
    retried = post_results(pod, session, body)
    assert without_benchmark(retried) == local_answer(board_url, session.run_id, 20)


def test_it_refuses_a_compressed_body(pod):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = gzip.compress(signed_body(pod, session, small_content(3)))

    answer = pod.send(
        "POST",
        results_path(session.run_id),
        body,
        {"X-Aeon-Run-Token": session.run_token, "Content-Encoding": "gzip"},
    )

    assert_refused(answer, 415, "UNSUPPORTED_ENCODING")
    assert not Run.objects.exists()
    assert session_of(session.run_id).status == SessionStatus.OPEN


def test_it_refuses_bodies_that_are_not_plain_json_and_leaves_the_session_untouched(pod):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    valid = signed_body(pod, session, small_content(2))
    lone_surrogate = signed_body(pod, session, small_content(2) | {"note": "\ud800"})
    assert b'"\\ud800"' in lone_surrogate
    bodies = {
        "10,000-deep nesting": b'{"bundle": ' + b"[" * 10_000 + b"]" * 10_000 + b"}",
        "65-deep nesting": b'{"bundle": ' + b"[" * 64 + b"]" * 64 + b"}",
        "duplicate keys": b'{"bundle": {}, "bundle": {}, "signature": "x"}',
        "5,000-digit integer": b'{"bundle": {"n": 1' + b"0" * 4_999 + b'}, "signature": "x"}',
        "byte-order mark": b"\xef\xbb\xbf" + valid,
        "bad UTF-8": valid.replace(b"case 0", b"case \xff\xfe"),
        "lone surrogate": lone_surrogate,
        "truncated": valid[:-1],
        "empty": b"",
    }

    for label, body in bodies.items():
        answer = post_results(pod, session, body)
        entry = assert_refused(answer, 400, "MALFORMED_JSON")
        assert (entry.run_id, entry.bytes) == (session.run_id, len(body)), label

    assert not Run.objects.exists()
    assert not ForgeryEvent.objects.exists()
    assert session_of(session.run_id).status == SessionStatus.OPEN


def test_it_refuses_a_score_that_is_not_a_finite_number_in_0_1(pod, board_url, settings):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    key = DeviceKey.objects.get(public_key=pod.public_key)
    scores = (float("nan"), 1.2, float("-inf"), -0.1, 7.0, float("inf"))
    assert len(scores) > settings.AEON_FORGERY_REVOKE_THRESHOLD

    for score in scores:
        content = small_content(2)
        content["results"][0]["score"] = score
        answer = pod.submit(session, content)
        assert_refused(answer, 400, "SCHEMA_INVALID")
        assert answer.body["note"].startswith("/results/0/score"), (score, answer.body)

    assert not Run.objects.exists()
    assert session_of(session.run_id).status == SessionStatus.OPEN
    # Kept for review, never counted: a format bug of one pod release must not revoke its pods.
    assert QuarantinedBundle.objects.filter(reason="SCHEMA_INVALID").count() == len(scores)
    assert not ForgeryEvent.objects.exists()
    assert DeviceKey.objects.get(pk=key.pk).status == KeyStatus.ACTIVE
    honest = pod.submit(session, small_content(2))
    assert without_benchmark(honest) == local_answer(board_url, session.run_id, 2)


def test_it_refuses_to_open_a_run_on_an_unknown_board(pod):
    answer = pod.post_json("/api/v1/runs", pod.open_run_request(MODEL, TEXT_SUITE, "poetry"))

    entry = assert_refused(answer, 400, "SCHEMA_INVALID", route="open_run")
    assert "/board" in answer.body["note"]
    assert entry.key_fingerprint == DeviceKey.objects.get().fingerprint
    assert not RunSession.objects.exists()


def test_it_stores_nul_in_a_completion_and_a_null_score_losslessly(pod):
    content = small_content(3)
    completion = "before\x00after \u4e2d\x00"
    content["results"][0]["raw_output"] = completion
    content["results"][1] |= {"status": "no_answer", "score": None}
    session = pod.open_run(MODEL, TEXT_SUITE, "text")

    answer = pod.submit(session, content)

    assert answer.status == 200 and answer.body["n_results"] == 3
    stored = read_run(pod, session.run_id).body["results"]
    assert stored[0]["raw_output"] == completion
    assert (stored[1]["status"], stored[1]["score"]) == ("no_answer", None)
    first, second = Result.objects.filter(run__run_id=session.run_id).order_by("position")[:2]
    assert first.raw_text == completion
    assert second.score is None


def test_it_parses_a_recipe_sent_as_a_json_string_and_keeps_unknown_keys(pod):
    recipe = {"engine": "vllm", "serve_mode": "docker", "flags": ["--max-num-seqs", "24"]}
    content = small_content(
        2,
        recipe=json.dumps(recipe),
        pod_feature_from_the_future={"enabled": True, "level": 3},
        operator_note="hello",
    )
    session = pod.open_run(MODEL, TEXT_SUITE, "text")

    answer = pod.submit(session, content)

    assert answer.status == 200, answer.body
    extras = Run.objects.get(run_id=session.run_id).extras
    assert extras["recipe"] == recipe
    assert extras["pod_feature_from_the_future"] == {"enabled": True, "level": 3}
    assert extras["operator_note"] == "hello"


def test_five_forgery_refusals_within_24_hours_revoke_the_key_once(pod, settings):
    assert settings.AEON_FORGERY_REVOKE_THRESHOLD == 5
    sessions = [pod.open_run(MODEL, TEXT_SUITE, "text") for _ in range(6)]
    key = DeviceKey.objects.get(public_key=pod.public_key)

    for session in sessions[:4]:
        assert_refused(
            post_results(pod, session, tampered(pod, session, small_content(2))), 400, "BAD_SIG"
        )
    assert DeviceKey.objects.get(pk=key.pk).status == KeyStatus.ACTIVE
    fifth = post_results(pod, sessions[4], tampered(pod, sessions[4], small_content(2)))
    assert_refused(fifth, 400, "BAD_SIG")
    sixth = post_results(pod, sessions[5], tampered(pod, sessions[5], small_content(2)))
    assert_refused(sixth, 403, "REVOKED_KEY")

    assert DeviceKey.objects.get(pk=key.pk).status == KeyStatus.REVOKED
    assert key.audit.filter(action=KeyAuditEntry.Action.REVOKED).count() == 1
    assert ForgeryEvent.objects.filter(key=key).count() == 5
    assert not Run.objects.exists()
    assert_refused(pod.enroll(), 403, "REVOKED_KEY", route="enroll")


def test_a_nul_in_an_identifier_is_refused_as_bad_input_never_as_unavailable(pod):
    # PostgreSQL text cannot hold NUL: looking such a value up must not become a 503, which
    # the pod would retry as if the board were down.
    challenge = pod.send("GET", "/api/v1/enroll/challenge").body["challenge"]
    enroll = pod.post_json("/api/v1/enroll", pod.enroll_request(challenge + "\x00"))
    assert_refused(enroll, 400, "CHALLENGE_INVALID", route="enroll")

    opening = pod.open_run_request(MODEL, TEXT_SUITE, "text")
    opening["public_key"] += "\x00"
    assert_refused(pod.post_json("/api/v1/runs", opening), 400, "BAD_SIG", route="open_run")

    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = signed_body(pod, session, small_content(2))
    unknown = pod.send(
        "POST", results_path("%00" + session.run_id), body, {"X-Aeon-Run-Token": session.run_token}
    )
    entry = assert_refused(unknown, 404, "RUN_NOT_FOUND")
    assert entry.run_id == "\ufffd" + session.run_id
    assert not ForgeryEvent.objects.exists()
    assert not Run.objects.exists()


def test_a_nul_in_a_case_id_is_accepted_in_checkpoints_as_in_finals(pod):
    content = small_content(3)
    content["results"][0]["case_id"] = "v4.math.easy.\x0001"
    session = pod.open_run(MODEL, TEXT_SUITE, "text")

    checkpoint = pod.submit(session, content | {"results": content["results"][:2]}, final=False)
    again = pod.submit(session, content | {"results": content["results"][:2]}, final=False)
    final = pod.submit(session, content)

    assert (checkpoint.status, checkpoint.body["n_results"]) == (200, 2)
    assert (again.status, again.body["n_results"]) == (200, 2)
    assert (final.status, final.body["n_results"]) == (200, 3)
    assert Result.objects.filter(run__run_id=session.run_id).count() == 3


def test_a_results_post_is_charged_to_the_keys_budget_only_with_the_runs_token(pod, settings):
    # Anyone who learns a run id can send a wrong token: that must not exhaust the pod's budget.
    settings.AEON_RATE_LIMIT_PER_KEY = 3
    settings.AEON_RATE_WINDOW_SECONDS = 3600  # no window boundary falls inside the test
    session = pod.open_run(MODEL, TEXT_SUITE, "text")  # the key's first request of the window
    content = small_content(3)
    checkpoint = signed_body(
        pod, session, content | {"results": content["results"][:1]}, final=False
    )
    for _ in range(settings.AEON_RATE_LIMIT_PER_KEY + 2):
        assert_refused(
            post_results(pod, session, checkpoint, token="x" * 43), 403, "TOKEN_MISMATCH"
        )
    unknown = pod.send(
        "POST", results_path("NoSuchRun0000001"), checkpoint, {"X-Aeon-Run-Token": "x"}
    )
    assert_refused(unknown, 404, "RUN_NOT_FOUND")

    assert post_results(pod, session, checkpoint).status == 200  # the second request counted
    assert post_results(pod, session, checkpoint).status == 200  # the third
    limited = post_results(pod, session, checkpoint)

    assert_refused(limited, 429, "RATE_LIMITED")
    assert 1 <= int(limited.headers["Retry-After"]) <= 3600


def test_a_results_post_past_the_ip_limit_is_refused_first_and_costs_the_key_nothing(pod, settings):
    settings.AEON_RATE_WINDOW_SECONDS = 3600  # no window boundary falls inside the test
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    key_scope = f"key:{DeviceKey.objects.get(public_key=pod.public_key).fingerprint}"
    settings.AEON_RATE_LIMIT_PER_IP = 0  # every request from here on is past it
    body = signed_body(pod, session, small_content(2))

    answers = [
        post_results(pod, session, body),
        pod.send("POST", results_path("NoSuchRun0000001"), body, {"X-Aeon-Run-Token": "x"}),
    ]

    for answer in answers:
        assert_refused(answer, 429, "RATE_LIMITED")
        assert 1 <= int(answer.headers["Retry-After"]) <= 3600
    assert RateCounter.objects.get(scope=key_scope).count == 1  # the open_run alone
    assert not Run.objects.exists()


def test_a_body_too_big_to_hold_is_deleted_again_when_it_does_not_parse(pod):
    # Its write to the blob store starts before it is parsed (docs/protocol.md §Ingest cost);
    # refused before its signature, it is no evidence and is removed (issue 20 point 3).
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = b'{"bundle": "' + b"x" * (services.HELD_WHILE_WRITTEN_BYTES + 1024) + b'"'  # no "}"

    answer = post_results(pod, session, body)

    assert_refused(answer, 400, "MALFORMED_JSON")
    assert not RawBundle.objects.filter(sha256=sha256(body)).exists()
    assert not blob_store().exists(sha256(body))
    assert not Run.objects.exists()


def test_open_run_with_a_bad_signature_does_not_spend_the_keys_rate_budget(pod, settings):
    # Anyone holding a pod's public key can send these: they must not exhaust its budget.
    settings.AEON_RATE_LIMIT_PER_KEY = 3
    forged = pod.open_run_request(MODEL, TEXT_SUITE, "text") | {"signature": pod.sign(b"other")}
    for _ in range(settings.AEON_RATE_LIMIT_PER_KEY + 2):
        assert_refused(pod.post_json("/api/v1/runs", forged), 400, "BAD_SIG", route="open_run")

    genuine = pod.post_json("/api/v1/runs", pod.open_run_request(MODEL, TEXT_SUITE, "text"))

    assert genuine.status == 200, genuine.body
    assert not ForgeryEvent.objects.exists()


def test_open_runs_with_a_bad_signature_never_reach_the_pods_public_record(pod, client):
    # Only the public key is needed to send these (issue 20, "A pod's public record is its own").
    fingerprint = key_fingerprint(pod.public_key)
    forged = pod.open_run_request(MODEL, TEXT_SUITE, "text") | {"signature": pod.sign(b"other")}
    for _ in range(20):
        entry = assert_refused(
            pod.post_json("/api/v1/runs", forged), 400, "BAD_SIG", route="open_run"
        )
        assert entry.key_fingerprint == "" and entry.client_ip  # logged by address
        assert fingerprint in entry.note  # the key it claimed, for moderators
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    assert pod.submit(session, small_content(2)).status == 200

    page = client.get(f"/pods/{fingerprint}/")

    assert page.status_code == 200
    text = page.content.decode()
    assert "BAD_SIG" not in text and "did not verify" not in text
    assert session.run_id in text
    # Its run (one row) and that run's two attempts, open-run and checkpoint: nothing else.
    assert text.count("<code>OK</code>") == 3
