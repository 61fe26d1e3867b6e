"""The evidence store, folder and S3 alike (docs/scale-out.md §The evidence bucket): the raw
signed bundles of a run and of a refused upload are stored under their sha256 and read back (by
a moderator's download and by a rebuild of the board), readiness reports the store, and a store
that cannot be reached answers the pod 503 UNAVAILABLE with nothing written, so its retry
commits.

These tests send every body to the store (AEON_INLINE_EVIDENCE_BYTES=0), as a body above the
threshold goes; the small ones kept in their rows: tests/test_inline_evidence.py.

The S3 backend talks over HTTP to moto's standalone server on a loopback port: boto3's real
client code runs against a real S3 wire protocol, each test in a bucket of its own."""

import io
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from board.models import Result, Run
from board.services import bump_generation
from evidence.blobstore import FileBlobStore, blob_store
from submissions.models import (
    IngestLogEntry,
    QuarantinedBundle,
    RawBundle,
    RunSession,
    SessionBundle,
    SessionStatus,
)
from tests.podchannel import (
    LIVE_DB,
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
from tests.processes import free_port

pytestmark = LIVE_DB

S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "aeon-test",
    "AWS_SECRET_ACCESS_KEY": "aeon-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}
CLOSED_PORT_URL = "http://127.0.0.1:9"  # nothing listens there: an instant refusal


@pytest.fixture(scope="session")
def s3_server():
    """moto's standalone S3 server on a loopback port, for the whole session; yields its URL."""
    try:
        import moto.server  # noqa: F401
    except ImportError:
        from tests.conftest import missing_service

        missing_service("needs moto[server] (a dev dependency): pip install -e '.[dev]'")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=os.environ | S3_CREDENTIALS,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/moto-api/", timeout=2).close()
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail("moto's S3 server exited at start")
                time.sleep(0.2)
        else:
            pytest.fail("moto's S3 server did not answer within 20 s")
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@dataclass
class Evidence:
    """Where the board keeps evidence in this test, read directly from its medium (a file, an
    object fetched by our own S3 client), never through the board's store."""

    kind: str
    settings: object
    folder: Path | None = None
    bucket: str = ""
    endpoint: str = ""

    def read(self, digest: str) -> bytes:
        if self.kind == "folder":
            return (self.folder / digest[:2] / digest[2:4] / digest).read_bytes()
        answer = self.client().get_object(Bucket=self.bucket, Key=f"bundles/{digest}")
        return answer["Body"].read()

    def names(self) -> list[str]:
        if self.kind == "folder":
            return sorted(p.name for p in self.folder.rglob("*") if len(p.name) == 64)
        listed = self.client().list_objects_v2(Bucket=self.bucket).get("Contents", [])
        return sorted(item["Key"].removeprefix("bundles/") for item in listed)

    def make_unreachable(self, tmp_path: Path) -> None:
        if self.kind == "folder":
            blocker = tmp_path / "not-a-folder"
            blocker.write_text("a regular file where the blob folder should be")
            self.settings.AEON_BLOB_DIR = blocker / "blobs"
        else:
            self.settings.AEON_S3_ENDPOINT_URL = CLOSED_PORT_URL

    def make_reachable(self) -> None:
        if self.kind == "folder":
            self.settings.AEON_BLOB_DIR = self.folder
        else:
            self.settings.AEON_S3_ENDPOINT_URL = self.endpoint

    def client(self):
        import boto3

        return boto3.session.Session(**_session_credentials()).client(
            "s3", endpoint_url=self.endpoint
        )


def _session_credentials() -> dict:
    return {
        "aws_access_key_id": S3_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": S3_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        "region_name": S3_CREDENTIALS["AWS_DEFAULT_REGION"],
    }


@pytest.fixture(params=["folder", "s3"])
def evidence(request, settings, blob_dir, monkeypatch) -> Evidence:
    """The board's evidence store for this test: conftest's fresh folder, or a fresh bucket on
    the loopback S3 server with credentials from the environment, as deployed. Every body goes
    to the store here, however small (bodies kept in their rows: tests/test_inline_evidence.py)."""
    settings.AEON_INLINE_EVIDENCE_BYTES = 0
    if request.param == "folder":
        return Evidence("folder", settings, folder=blob_dir)
    endpoint = request.getfixturevalue("s3_server")
    for name, value in S3_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    found = Evidence("s3", settings, bucket=f"aeon-{uuid.uuid4().hex[:20]}", endpoint=endpoint)
    found.client().create_bucket(Bucket=found.bucket)
    settings.AEON_BLOB_BACKEND = "s3"
    settings.AEON_S3_BUCKET = found.bucket
    settings.AEON_S3_ENDPOINT_URL = endpoint
    settings.AEON_S3_PREFIX = "bundles/"
    settings.AEON_S3_REGION = S3_CREDENTIALS["AWS_DEFAULT_REGION"]
    return found


def test_a_runs_raw_bundles_are_stored_under_their_sha256_and_read_back(
    evidence, pod, board_url, client
):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    content = small_content(3)
    checkpoint = signed_body(
        pod, session, content | {"results": content["results"][:1]}, final=False
    )
    final = signed_body(pod, session, content)

    assert post_results(pod, session, checkpoint).status == 200
    committed = post_results(pod, session, final)

    assert without_benchmark(committed) == local_answer(board_url, session.run_id, 3)
    assert evidence.names() == sorted([sha256(checkpoint), sha256(final)])
    for body in (checkpoint, final):
        assert evidence.read(sha256(body)) == body
        assert blob_store().get(sha256(body)) == body
        assert blob_store().exists(sha256(body))
        row = RawBundle.objects.get(sha256=sha256(body))
        assert (row.size, row.content) == (len(body), None)
    assert not blob_store().exists("0" * 64)
    with pytest.raises(FileNotFoundError):
        blob_store().get("0" * 64)
    assert list(
        SessionBundle.objects.filter(session__run_id=session.run_id)
        .order_by("pk")
        .values_list("raw_id", "final")
    ) == [(sha256(checkpoint), False), (sha256(final), True)]
    # A moderator downloads the signed bytes the board reads back from the store.
    client.force_login(
        get_user_model().objects.create_user("moderator", password="x" * 12, is_staff=True)
    )
    download = client.get(f"/runs/{session.run_id}/bundle.json")
    assert download.status_code == 200
    assert download.getvalue() == final


def test_a_refused_bundle_is_kept_in_quarantine_in_the_store(evidence, pod):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = tampered(pod, session, small_content(3))

    answer = post_results(pod, session, body)

    assert (answer.status, answer.body["reason"]) == (400, "BAD_SIG")
    quarantined = QuarantinedBundle.objects.get()
    assert (quarantined.raw_id, quarantined.reason) == (sha256(body), "BAD_SIG")
    assert evidence.read(sha256(body)) == body
    assert blob_store().get(quarantined.raw_id) == body
    assert not Run.objects.exists()


def store_readiness(client) -> tuple[int, str]:
    """/readyz's status and its verdict on the evidence store."""
    answer = client.get("/readyz")
    return answer.status_code, answer.json()["checks"]["blob_store"]


def test_readiness_reports_whether_the_store_answers(evidence, client, tmp_path):
    assert store_readiness(client)[1] == "ok"

    evidence.make_unreachable(tmp_path)
    status, verdict = store_readiness(client)
    assert status == 503
    assert verdict != "ok" and verdict.startswith("error")

    evidence.make_reachable()
    assert store_readiness(client)[1] == "ok"


def test_an_unreachable_store_refuses_with_503_and_the_pods_retry_commits(
    evidence, pod, board_url, tmp_path
):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = signed_body(pod, session, small_content(4, job_sig=job_sig("blob")))
    evidence.make_unreachable(tmp_path)

    failed = post_results(pod, session, body)

    assert failed.status == 503, failed.body
    assert failed.body == {
        "error": "UNAVAILABLE",
        "reason": "UNAVAILABLE",
        "note": failed.body["note"],
    }
    assert int(failed.headers["Retry-After"]) > 0
    entry = IngestLogEntry.objects.order_by("-pk").first()
    assert (entry.route, entry.status, entry.reason) == ("results", 503, "UNAVAILABLE")
    assert not RawBundle.objects.exists()
    assert not Run.objects.exists() and not Result.objects.exists()
    stored = RunSession.objects.get(run_id=session.run_id)
    assert (stored.status, stored.final_bundle_sha256) == (SessionStatus.OPEN, "")

    evidence.make_reachable()
    retried = post_results(pod, session, body)

    assert without_benchmark(retried) == local_answer(board_url, session.run_id, 4)
    assert Run.objects.count() == 1
    assert evidence.read(sha256(body)) == body


def test_a_rebuild_reads_every_run_back_from_the_store(evidence, pod, board_url):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    assert pod.submit(session, small_content(4)).status == 200
    before = read_run(pod, session.run_id).body
    Run.objects.all().delete()  # only the evidence is left
    bump_generation()

    out = io.StringIO()
    call_command("rebuild_board", stdout=out)

    assert out.getvalue().strip() == "rebuilt 1 runs from their bundles"
    assert read_run(pod, session.run_id).body == before


def test_a_big_signed_final_waits_in_the_spool_until_signed_and_none_is_left(
    evidence, pod, board_url, tmp_path, settings
):
    """A body over 8 MiB is spooled before it is parsed and enters the store once its signature
    verified (docs/operations.md §Cleanup, the spool): moved into the folder, uploaded to the
    bucket. A store that fails then answers 503, and its spool file is removed all the same."""
    settings.AEON_SPOOL_DIR = str(tmp_path / "spool")  # apart from the store (still reachable)
    content = small_content(2, job_sig=job_sig("spooled"))
    content["results"][1]["raw_output"] = "z" * (9 * 1024 * 1024)
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = signed_body(pod, session, content)
    evidence.make_unreachable(tmp_path)

    failed = post_results(pod, session, body)

    assert failed.status == 503, failed.body
    assert not RawBundle.objects.exists() and not Run.objects.exists()
    assert list((tmp_path / "spool").iterdir()) == []

    evidence.make_reachable()
    committed = post_results(pod, session, body)

    assert without_benchmark(committed) == local_answer(board_url, session.run_id, 2)
    assert evidence.names() == [sha256(body)] and evidence.read(sha256(body)) == body
    assert list((tmp_path / "spool").iterdir()) == []


def test_a_spooled_file_on_another_file_system_is_copied_into_the_folder(tmp_path):
    other = Path("/dev/shm")
    if not other.is_dir() or other.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs a second file system (/dev/shm)")
    source = other / f"aeon-spool-{uuid.uuid4().hex}"
    source.write_bytes(b"spooled body")
    store = FileBlobStore(tmp_path / "blobs")
    try:
        assert store.put_file(source, digest=sha256(b"spooled body")) == sha256(b"spooled body")
    finally:
        source.unlink(missing_ok=True)
    assert store.get(sha256(b"spooled body")) == b"spooled body"
    assert list((tmp_path / "blobs").rglob(".incoming-*")) == []
