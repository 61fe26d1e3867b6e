"""Bounded storage (issue 20 point 3; docs/protocol.md §Storage caps, docs/operations.md
§Cleanup): per-session and per-key caps on checkpoints, refused before their body is stored (a
final still commits), and the scheduled cleanup of expired challenges, stale sessions, orphan
evidence, expired unsigned quarantine and the store's temporary files, with its counts."""

import base64
import hashlib
import json
import logging
import os
import time
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from config.api_errors import Reason
from evidence.blobstore import blob_store
from submissions import cleanup
from submissions.ingest.evidence import spool_dir
from submissions.models import (
    Challenge,
    CheckpointRow,
    IngestLogEntry,
    QuarantinedBundle,
    RawBundle,
    RunSession,
    SessionBundle,
)
from submissions.tasks import clean_up_pod_channel
from tests.podchannel import MODEL, TEXT_SUITE, post_results, small_content

pytestmark = pytest.mark.django_db(transaction=True)
MIB = 1024 * 1024


def test_a_session_past_its_checkpoint_cap_is_refused_unstored_and_its_final_commits(pod, settings):
    settings.AEON_MAX_CHECKPOINTS_PER_SESSION = 2
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    for count in (1, 2):
        assert pod.submit(session, small_content(count), final=False).status == 200
    evidence = RawBundle.objects.count()
    refused = pod.submit(session, small_content(3), final=False)
    assert (refused.status, refused.body["reason"]) == (413, Reason.SIZE_EXCEEDED)
    assert "2 checkpoints" in refused.body["note"]
    assert RawBundle.objects.count() == evidence  # nothing of it was kept
    final = pod.submit(session, small_content(4))
    assert final.status == 200 and final.body["n_results"] == 4, final.body


def test_a_session_past_its_checkpoint_bytes_is_refused(pod, settings):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    assert pod.submit(session, small_content(2), final=False).status == 200
    held = SessionBundle.objects.get(session__run_id=session.run_id).raw.size
    settings.AEON_MAX_CHECKPOINT_BYTES_PER_SESSION = held + 100
    refused = pod.submit(session, small_content(3), final=False)
    assert (refused.status, refused.body["reason"]) == (413, Reason.SIZE_EXCEEDED)
    assert "bytes" in refused.body["note"]


def test_a_key_past_its_daily_checkpoint_quota_waits(pod, settings):
    """docs/protocol.md §Quotas per key: refused as the finals' quota is, 429 QUOTA_EXCEEDED
    with the seconds until the oldest counted checkpoint leaves the 24-hour window."""
    settings.AEON_MAX_CHECKPOINTS_PER_KEY_DAY = 3
    first = pod.open_run(MODEL, TEXT_SUITE, "text")
    second = pod.open_run(MODEL, TEXT_SUITE, "text")
    for session, count in ((first, 1), (first, 2), (second, 1)):
        assert pod.submit(session, small_content(count), final=False).status == 200
    refused = pod.submit(second, small_content(2), final=False)
    assert (refused.status, refused.body["reason"]) == (429, Reason.QUOTA_EXCEEDED)
    assert (
        refused.body["error"] == Reason.QUOTA_EXCEEDED and "3 checkpoints" in refused.body["note"]
    )
    assert 86_000 < int(refused.headers["Retry-After"]) <= 86_400
    # Stored 23 h ago, the oldest leaves the window in an hour.
    oldest = SessionBundle.objects.filter(final=False).order_by("received_at").first()
    SessionBundle.objects.filter(pk=oldest.pk).update(
        received_at=timezone.now() - timedelta(hours=23)
    )
    again = pod.submit(second, small_content(2), final=False)
    assert (again.status, again.body["reason"]) == (429, Reason.QUOTA_EXCEEDED)
    assert 3_500 < int(again.headers["Retry-After"]) <= 3_600
    assert pod.submit(second, small_content(3)).status == 200  # the final is never capped


def test_a_key_past_its_daily_checkpoint_bytes_waits(pod, settings):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    assert pod.submit(session, small_content(2), final=False).status == 200
    held = SessionBundle.objects.get(session__run_id=session.run_id).raw.size
    settings.AEON_MAX_CHECKPOINT_BYTES_PER_KEY_DAY = held + 100
    other = pod.open_run(MODEL, TEXT_SUITE, "text")
    refused = pod.submit(other, small_content(2), final=False)
    assert (refused.status, refused.body["reason"]) == (429, Reason.QUOTA_EXCEEDED)
    assert 86_000 < int(refused.headers["Retry-After"]) <= 86_400
    assert "within 24 h" in refused.body["note"]
    # A day later the quota is free again.
    SessionBundle.objects.update(received_at=timezone.now() - timedelta(hours=25))
    assert pod.submit(other, small_content(2), final=False).status == 200


def test_a_key_past_its_daily_upload_quota_waits_before_its_body_is_read(make_pod, settings):
    """docs/protocol.md §Quotas per key: past AEON_MAX_FINALS_PER_KEY_DAY committed finals, every
    results POST of the key is refused 429 QUOTA_EXCEEDED before its body is read, with the
    seconds until its oldest counted final leaves the window; another key is unaffected."""
    settings.AEON_MAX_FINALS_PER_KEY_DAY = 2
    pod, other = make_pod(), make_pod()
    for number in (1, 2):
        session = pod.open_run(MODEL, TEXT_SUITE, "text")
        answer = pod.submit(session, small_content(2, job_sig=f"{number:024x}"))
        assert answer.status == 200, answer.body
    evidence, sessions = RawBundle.objects.count(), SessionBundle.objects.count()
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    refused = pod.submit(session, small_content(3, job_sig=f"{3:024x}"))
    assert (refused.status, refused.body["reason"]) == (429, Reason.QUOTA_EXCEEDED)
    assert refused.body["error"] == Reason.QUOTA_EXCEEDED and "2 finals" in refused.body["note"]
    assert 86_000 < int(refused.headers["Retry-After"]) <= 86_400
    log = IngestLogEntry.objects.filter(run_id=session.run_id).latest("pk")
    assert (log.status, log.reason, log.bytes) == (429, Reason.QUOTA_EXCEEDED, 0)  # body unread
    assert (RawBundle.objects.count(), SessionBundle.objects.count()) == (evidence, sessions)
    assert RunSession.objects.get(run_id=session.run_id).status == "open"
    # Another key is unaffected.
    theirs = other.open_run(MODEL, TEXT_SUITE, "text")
    assert other.submit(theirs, small_content(3, job_sig=f"{3:024x}")).status == 200
    # Once the oldest final is older than 24 h, a slot is free, and Retry-After counts to the next.
    oldest = RunSession.objects.filter(key__public_key=pod.public_key).order_by("committed_at")
    RunSession.objects.filter(pk=oldest.first().pk).update(
        committed_at=timezone.now() - timedelta(hours=25)
    )
    assert pod.submit(session, small_content(3, job_sig=f"{3:024x}")).status == 200
    again = pod.submit(pod.open_run(MODEL, TEXT_SUITE, "text"), small_content(1))
    assert (again.status, again.body["reason"]) == (429, Reason.QUOTA_EXCEEDED)


def test_a_key_past_its_daily_upload_bytes_waits(make_pod, settings):
    pod = make_pod()
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    assert pod.submit(session, small_content(2)).status == 200
    settings.AEON_MAX_FINAL_BYTES_PER_KEY_DAY = RawBundle.objects.get().size
    refused = pod.submit(pod.open_run(MODEL, TEXT_SUITE, "text"), small_content(2))
    assert (refused.status, refused.body["reason"]) == (429, Reason.QUOTA_EXCEEDED)
    assert int(refused.headers["Retry-After"]) > 0


def test_a_quota_of_no_finals_refuses_every_upload_for_a_whole_day(pod, settings):
    settings.AEON_MAX_FINALS_PER_KEY_DAY = 0
    refused = pod.submit(pod.open_run(MODEL, TEXT_SUITE, "text"), small_content(1))
    assert (refused.status, refused.body["reason"]) == (429, Reason.QUOTA_EXCEEDED)
    assert refused.headers["Retry-After"] == "86400"


def _files(folder) -> list:
    return [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []


def test_big_bodies_wait_in_the_spool_and_enter_the_store_only_once_signed(pod, settings):
    """issue 20 point 3: five 9 MiB random bodies, each answered 400 (random text, not JSON),
    one of random bytes (400 too) and one of `[{},{},…]` (413: it would decode to more than its
    budget) leave no file in the store and none in the spool; a signed 9 MiB final is moved from
    the spool into the store."""
    store_root = settings.AEON_BLOB_DIR
    spool = spool_dir()
    assert spool == store_root / ".spool"  # the store's file system, outside its names
    bodies = [b'{"bundle": "' + base64.b64encode(os.urandom(7 * MIB)) for _ in range(5)]
    bodies.append(os.urandom(9 * MIB))
    too_large = b"[" + b"{}," * (3 * MIB) + b"{}]"
    for body in [*bodies, too_large]:
        assert len(body) >= 9 * MIB  # over 8 MiB: spooled before it is parsed
        session = pod.open_run(MODEL, TEXT_SUITE, "text")
        answer = post_results(pod, session, body)
        assert (answer.status, answer.body["reason"]) in (
            (400, Reason.MALFORMED_JSON),
            (413, Reason.SIZE_EXCEEDED),
        ), answer.body
        assert answer.status == (400 if body in bodies else 413)
    # Not a file of the store, nor a folder of its names (a store write makes one, and a
    # delete leaves it): the refused bodies never reached it.
    assert [path for path in store_root.iterdir() if path != spool] == []
    assert _files(spool) == [] and not RawBundle.objects.exists()

    content = small_content(2)
    content["results"][1]["raw_output"] = "y" * (9 * MIB)
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = json.dumps(pod.signed_results(session, content, final=True)).encode()
    assert post_results(pod, session, body).status == 200
    digest = hashlib.sha256(body).hexdigest()
    assert blob_store().get(digest) == body and RawBundle.objects.filter(sha256=digest).exists()
    assert _files(spool) == []


def test_readiness_fails_while_the_spool_takes_no_file(client, settings, tmp_path):
    assert client.get("/readyz").json()["checks"]["spool"] == "ok"
    assert _files(spool_dir()) == []  # the probe's file is gone
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a regular file where the spool should be")
    settings.AEON_SPOOL_DIR = str(blocker / "spool")
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["checks"]["spool"].startswith("error")


def test_a_spool_file_left_behind_is_cleaned_up(settings):
    spool = spool_dir()
    spool.mkdir(parents=True)
    old, new = spool / "body-old", spool / "body-new"
    old.write_bytes(b"x")
    new.write_bytes(b"x")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    assert cleanup.clean_up().store_temp_files == 1
    assert not old.exists() and new.exists()


def test_the_cleanup_is_scheduled_on_the_beat():
    entry = django_settings.CELERY_BEAT_SCHEDULE["clean-up-pod-channel"]
    assert entry["task"] == clean_up_pod_channel.name


def _age(model, pk, field: str, age: timedelta) -> None:
    model.objects.filter(pk=pk).update(**{field: timezone.now() - age})


def test_the_cleanup_deletes_what_expired_and_keeps_the_rest(pod, settings, caplog):
    settings.AEON_INLINE_EVIDENCE_BYTES = 0  # every body a file of the store
    settings.AEON_UNSIGNED_QUARANTINE_PER_KEY = 1
    # Challenges: one long expired, one live.
    old = Challenge.objects.create(value="old", expires_at=timezone.now() - timedelta(days=2))
    live = Challenge.objects.create(value="live", expires_at=timezone.now() + timedelta(hours=1))
    # A stale session with a checkpoint; a fresh one with a checkpoint; a committed run.
    stale = pod.open_run(MODEL, TEXT_SUITE, "text")
    assert pod.submit(stale, small_content(2), final=False).status == 200
    fresh = pod.open_run(MODEL, TEXT_SUITE, "text")
    assert pod.submit(fresh, small_content(2, note="fresh"), final=False).status == 200
    committed = pod.open_run(MODEL, TEXT_SUITE, "text")
    assert pod.submit(committed, small_content(3)).status == 200
    stale_row = RunSession.objects.get(run_id=stale.run_id)
    _age(RunSession, stale_row.pk, "opened_at", timedelta(days=40))
    _age(RunSession, stale_row.pk, "last_progress_at", timedelta(days=40))
    stale_raw = SessionBundle.objects.get(session=stale_row).raw_id
    # Two unsigned bodies in quarantine (bad signatures), on two sessions of the key.
    unsigned = []
    for _ in range(2):
        session = pod.open_run(MODEL, TEXT_SUITE, "text")
        body = pod.signed_results(session, small_content(1), final=False)
        body["signature"] = "A" * 86 + "=="
        answer = post_results(pod, session, json.dumps(body).encode())
        assert answer.body["reason"] == Reason.BAD_SIG
        unsigned.append(QuarantinedBundle.objects.get(run_id=session.run_id))
    # A big body refused before its signature (not JSON): written ahead, removed at once.
    refused = b"\xff" * (9 * MIB)
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    assert post_results(pod, session, refused).body["reason"] == Reason.MALFORMED_JSON
    store = blob_store()
    assert not RawBundle.objects.filter(size=len(refused)).exists()
    assert not store.exists(hashlib.sha256(refused).hexdigest())
    # A temporary file a crash left behind, and a new one a write in flight holds.
    root = settings.AEON_BLOB_DIR
    leftover, in_flight = root / ".incoming-left", root / ".incoming-now"
    leftover.write_bytes(b"x")
    in_flight.write_bytes(b"x")
    os.utime(leftover, (time.time() - 7200, time.time() - 7200))
    # Everything refused or orphaned ages past its time.
    RawBundle.objects.update(stored_at=timezone.now() - timedelta(days=2))

    with caplog.at_level(logging.INFO, logger="aeon.cleanup"):
        # Run as the beat's task runs (in this process: .get() on it would refuse to block
        # after a test of this worker started a Celery worker in-process).
        cleaned = clean_up_pod_channel.apply().result

    assert cleaned == {
        "challenges": 1,
        "stale_sessions": 1,
        "unsigned_quarantine": 1,  # over the cap of 1 per key: the older one
        "orphan_evidence": 2,  # the stale checkpoint, the older unsigned body
        "orphan_evidence_bytes": cleaned["orphan_evidence_bytes"],
        "store_temp_files": 1,
    }
    assert cleaned["orphan_evidence_bytes"] > 0
    assert "pod channel cleaned" in caplog.text and "'stale_sessions': 1" in caplog.text
    assert not Challenge.objects.filter(pk=old.pk).exists()
    assert Challenge.objects.filter(pk=live.pk).exists()
    assert not RunSession.objects.filter(run_id=stale.run_id).exists()
    assert not CheckpointRow.objects.filter(session_id=stale_row.pk).exists()
    assert not RawBundle.objects.filter(sha256=stale_raw).exists()
    assert not store.exists(stale_raw)
    assert RunSession.objects.filter(run_id=fresh.run_id, checkpoints=1).exists()
    assert not QuarantinedBundle.objects.filter(pk=unsigned[0].pk).exists()
    assert QuarantinedBundle.objects.filter(pk=unsigned[1].pk).exists()
    assert not RawBundle.objects.filter(sha256=unsigned[0].raw_id).exists()
    assert not store.exists(unsigned[0].raw_id)
    assert not leftover.exists() and in_flight.exists()
    # What a committed run refers to stays, file included.
    final = RunSession.objects.get(run_id=committed.run_id).final_bundle_sha256
    assert RawBundle.objects.filter(sha256=final).exists() and store.exists(final)
    assert cleanup.clean_up().orphan_evidence == 0  # nothing left to do


def test_unsigned_quarantine_expires_unless_reviewed(pod, settings):
    rows = []
    for _ in range(2):
        session = pod.open_run(MODEL, TEXT_SUITE, "text")
        body = pod.signed_results(session, small_content(1), final=False)
        body["signature"] = "A" * 86 + "=="
        assert post_results(pod, session, json.dumps(body).encode()).body["reason"] == "BAD_SIG"
        rows.append(QuarantinedBundle.objects.get(run_id=session.run_id))
    QuarantinedBundle.objects.update(created_at=timezone.now() - timedelta(days=15))
    QuarantinedBundle.objects.filter(pk=rows[1].pk).update(reviewed=True)
    assert cleanup.clean_up().unsigned_quarantine == 1
    assert list(QuarantinedBundle.objects.values_list("pk", flat=True)) == [rows[1].pk]
