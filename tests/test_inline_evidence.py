"""Small evidence kept in its database row (docs/protocol.md §Evidence and the ingest log): a
body of at most AEON_INLINE_EVIDENCE_BYTES is written into its RawBundle row and never to the
blob store, and every reader of evidence (the moderator's download, a rebuild, the backup
commands) finds it there; a bigger body goes to the blob store as before. The store itself,
folder and S3: tests/test_blob_stores.py."""

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from board.models import Run
from board.services import bump_generation
from submissions.models import QuarantinedBundle, RawBundle, SessionBundle
from submissions.services import store_evidence_row
from tests.podchannel import (
    MODEL,
    TEXT_SUITE,
    job_sig,
    local_answer,
    post_results,
    read_run,
    sha256,
    signed_body,
    small_content,
    tampered,
    without_benchmark,
)

pytestmark = pytest.mark.django_db


def bundle_files(folder: Path) -> list[str]:
    """The bundles a folder laid out as the folder store holds, by name."""
    return sorted(p.name for p in folder.rglob("*") if len(p.name) == 64) if folder.exists() else []


def inline_content(digest: str) -> bytes | None:
    content = RawBundle.objects.get(sha256=digest).content
    return None if content is None else bytes(content)


def checkpoint_and_final(pod, rows: int = 3, **extras):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    content = small_content(rows, **extras)
    checkpoint = signed_body(
        pod, session, content | {"results": content["results"][:1]}, final=False
    )
    return session, checkpoint, signed_body(pod, session, content)


def make_unreachable(settings, tmp_path: Path) -> None:
    """A regular file where the blob folder should be: every write to the store fails."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a regular file where the blob folder should be")
    settings.AEON_BLOB_DIR = blocker / "blobs"


def test_a_small_checkpoint_and_final_are_kept_in_their_rows_and_read_back(
    pod, board_url, client, blob_dir
):
    session, checkpoint, final = checkpoint_and_final(pod)

    assert post_results(pod, session, checkpoint).status == 200
    committed = post_results(pod, session, final)

    assert without_benchmark(committed) == local_answer(board_url, session.run_id, 3)
    for body in (checkpoint, final):
        assert inline_content(sha256(body)) == body
        assert RawBundle.objects.get(sha256=sha256(body)).size == len(body)
    assert bundle_files(blob_dir) == []
    assert list(
        SessionBundle.objects.filter(session__run_id=session.run_id)
        .order_by("pk")
        .values_list("raw_id", "final")
    ) == [(sha256(checkpoint), False), (sha256(final), True)]
    client.force_login(
        get_user_model().objects.create_user("moderator", password="x" * 12, is_staff=True)
    )
    download = client.get(f"/runs/{session.run_id}/bundle.json")
    assert (download.status_code, download.getvalue()) == (200, final)


def test_a_rebuild_reads_small_bundles_from_their_rows(pod, blob_dir):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    assert pod.submit(session, small_content(4)).status == 200
    before = read_run(pod, session.run_id).body
    Run.objects.all().delete()  # only the evidence is left, in the database
    bump_generation()

    out = io.StringIO()
    call_command("rebuild_board", stdout=out)

    assert out.getvalue().strip() == "rebuilt 1 runs from their bundles"
    assert read_run(pod, session.run_id).body == before
    assert bundle_files(blob_dir) == []


def test_a_refused_small_body_is_kept_inline_in_quarantine(pod, blob_dir):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = tampered(pod, session, small_content(3))

    answer = post_results(pod, session, body)

    assert (answer.status, answer.body["reason"]) == (400, "BAD_SIG")
    quarantined = QuarantinedBundle.objects.get()
    assert (quarantined.raw_id, quarantined.reason) == (sha256(body), "BAD_SIG")
    assert inline_content(quarantined.raw_id) == body
    assert bundle_files(blob_dir) == []


def test_a_body_above_the_threshold_goes_to_the_store_and_reads_back(
    pod, board_url, client, blob_dir, settings
):
    session, checkpoint, final = checkpoint_and_final(pod, rows=6)
    assert len(checkpoint) < len(final)
    settings.AEON_INLINE_EVIDENCE_BYTES = len(checkpoint)  # at the threshold: still inline

    assert post_results(pod, session, checkpoint).status == 200
    committed = post_results(pod, session, final)

    assert without_benchmark(committed) == local_answer(board_url, session.run_id, 6)
    assert inline_content(sha256(checkpoint)) == checkpoint
    assert inline_content(sha256(final)) is None
    assert bundle_files(blob_dir) == [sha256(final)]
    client.force_login(
        get_user_model().objects.create_user("moderator", password="x" * 12, is_staff=True)
    )
    assert client.get(f"/runs/{session.run_id}/bundle.json").getvalue() == final


def test_an_unreachable_store_refuses_only_a_body_that_needs_it(
    make_pod, board_url, settings, tmp_path, blob_dir
):
    pod = make_pod()
    session, _, small = checkpoint_and_final(pod, rows=4, job_sig=job_sig("small"))
    big_session, _, big = checkpoint_and_final(pod, rows=5, job_sig=job_sig("big"))
    settings.AEON_INLINE_EVIDENCE_BYTES = len(small)
    assert len(big) > len(small)
    make_unreachable(settings, tmp_path)

    # A small body never touches the store: it commits.
    committed = post_results(pod, session, small)
    assert without_benchmark(committed) == local_answer(board_url, session.run_id, 4)
    assert inline_content(sha256(small)) == small

    # A bigger one still needs the store: 503, nothing written, and the retry commits.
    refused = post_results(pod, big_session, big)
    assert (refused.status, refused.body["reason"]) == (503, "UNAVAILABLE")
    assert not RawBundle.objects.filter(sha256=sha256(big)).exists()
    assert Run.objects.filter(run_id=big_session.run_id).count() == 0

    settings.AEON_BLOB_DIR = blob_dir
    retried = post_results(pod, big_session, big)
    assert without_benchmark(retried) == local_answer(board_url, big_session.run_id, 5)
    assert inline_content(sha256(big)) is None
    assert bundle_files(blob_dir) == [sha256(big)]


def test_a_backup_holds_every_bundle_and_a_restore_needs_the_folder_only_for_the_store(
    make_pod, settings, tmp_path, blob_dir
):
    pod = make_pod()
    small_session, _, small = checkpoint_and_final(pod, rows=4, job_sig=job_sig("small"))
    big_session, _, big = checkpoint_and_final(pod, rows=5, job_sig=job_sig("big"))
    settings.AEON_INLINE_EVIDENCE_BYTES = len(small)
    assert post_results(pod, small_session, small).status == 200
    assert post_results(pod, big_session, big).status == 200
    backup = tmp_path / "backup"

    out = io.StringIO()
    call_command("export_evidence", "--to", str(backup), stdout=out)

    assert out.getvalue().strip() == "evidence exported: 2 bundles copied, 0 already there"
    assert bundle_files(backup) == sorted([sha256(small), sha256(big)])
    for body in (small, big):
        digest = sha256(body)
        assert (backup / digest[:2] / digest[2:4] / digest).read_bytes() == body

    # A restore into an empty store: only the bundle that is not in its row comes back from the
    # folder, and the check finds every bundle.
    settings.AEON_BLOB_DIR = tmp_path / "restored"
    out = io.StringIO()
    call_command("import_evidence", "--from", str(backup), stdout=out)
    assert out.getvalue().strip() == "evidence imported: 1 bundles (1 more in the database)"
    assert bundle_files(settings.AEON_BLOB_DIR) == [sha256(big)]

    out = io.StringIO()
    call_command("verify_restore", "--seed", "1", stdout=out)
    report = json.loads(out.getvalue()[: out.getvalue().rindex("}") + 1])
    assert (report["bundles_named"], report["bundles_missing"]) == (2, [])
    assert report["bundles_verified"] == 2

    # With the store's copy gone, the check says which one is missing.
    (settings.AEON_BLOB_DIR / sha256(big)[:2] / sha256(big)[2:4] / sha256(big)).unlink()
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 bundles missing from the store"):
        call_command("verify_restore", "--seed", "1", "--sample", "0", stdout=out)


def test_a_stored_bundle_keeps_its_row_when_it_comes_again_small(pod, settings, blob_dir):
    """A body first stored in the blob store (threshold 0) and sent again under a threshold that
    would keep it inline: its row is left as it is, and it is still read from the store."""
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = tampered(pod, session, small_content(3))
    settings.AEON_INLINE_EVIDENCE_BYTES = 0
    assert post_results(pod, session, body).status == 400
    settings.AEON_INLINE_EVIDENCE_BYTES = 1024 * 1024

    assert post_results(pod, session, body).status == 400

    assert inline_content(sha256(body)) is None
    assert bundle_files(blob_dir) == [sha256(body)]
    assert QuarantinedBundle.objects.filter(raw_id=sha256(body)).count() == 2


def test_an_inline_row_keeps_every_byte_and_a_second_store_leaves_it_as_it_is():
    body = bytes(range(256)) * 1024  # every byte value, 256 KiB
    store_evidence_row(sha256(body), len(body), body)
    store_evidence_row(sha256(body), len(body))  # the same body again, in the store this time
    assert inline_content(sha256(body)) == body
    assert RawBundle.objects.filter(sha256=sha256(body)).count() == 1
