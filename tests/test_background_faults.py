"""Background work under faults degrades, never corrupts (docs/operations.md §Background work,
§Faults): weight checks retry a database that went away, a verdict and its signed manifest
version commit together, recomputes for one class coalesce and weight checks have a queue of
their own, a run left pending is sent again within minutes, a dead worker's tasks come back
well before two hours, and a full evidence disk fails readiness and leaves no temporary file.

Real parts only: PostgreSQL faults are made by PostgreSQL itself (a trigger that raises a
connection error, or that has the server end the connection), the worker is a real Celery worker
on Redis, the full disk is a real file system that is full."""

import json
import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.db import OperationalError, connection
from django.utils import timezone

from anchor.models import RunManifest
from board.models import Run
from demo.bundles import DEMO_MODELS, demo_model
from demo.podclient import PodClient
from tests.boardjobs import core_job, put_on_hub, submit_job
from tests.processes import spawn
from tests.test_celery_worker import (  # noqa: F401 (fixture)
    REDIS_URL,
    deployed_board,
    redis_answers,
    stop,
    upload_text_and_perf,
)

GEMMA = demo_model("gemma-4-26b-a4b-dflash-spark")
MANIFEST_TABLE = RunManifest._meta.db_table

pytestmark = pytest.mark.django_db(transaction=True)


def latest_standing(run_id: str) -> dict:
    latest = RunManifest.objects.filter(run_id=run_id).order_by("-version").first()
    return json.loads(latest.document)["standing"]


def sql(statement: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement)


@pytest.fixture
def manifest_fault(postgres):
    """A fault in the database after the verdict's UPDATE and before its manifest version's
    INSERT, in the same transaction. `arm(mode, times)`: the next `times` verdict versions
    fail, `raise` with the server's own 57P01 error, `terminate` by the server ending the
    connection (pg_terminate_backend of itself). Counted by a sequence, which a rollback does
    not undo."""

    def arm(mode: str, times: int) -> None:
        action = (
            "RAISE EXCEPTION 'fault: the database went away' USING ERRCODE = '57P01';"
            if mode == "raise"
            else "PERFORM pg_terminate_backend(pg_backend_pid());"
        )
        sql("DROP SEQUENCE IF EXISTS fault_count; CREATE SEQUENCE fault_count")
        sql(
            f"""CREATE OR REPLACE FUNCTION manifest_fault() RETURNS trigger AS $$
            BEGIN
              IF NEW.version > 1 AND nextval('fault_count') <= {times} THEN {action} END IF;
              RETURN NEW;
            END $$ LANGUAGE plpgsql"""
        )
        sql(
            f"CREATE OR REPLACE TRIGGER manifest_fault BEFORE INSERT ON {MANIFEST_TABLE} "
            "FOR EACH ROW EXECUTE FUNCTION manifest_fault()"
        )

    def faults_made() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT last_value, is_called FROM fault_count")
            value, called = cursor.fetchone()
        return value if called else 0

    arm.faults_made = faults_made
    yield arm
    sql(f"DROP TRIGGER IF EXISTS manifest_fault ON {MANIFEST_TABLE}")


def test_a_verdict_and_its_manifest_version_commit_together(pod, hub, manifest_fault):
    from submissions.weight_checks import check_run_weights

    hub.fail_next(GEMMA.hf_repo, 503, times=50)  # the checks defer at commit
    run_ids = [answer.body["run_id"] for answer in submit_job(pod, core_job(GEMMA))]
    hub.recover(GEMMA.hf_repo)
    put_on_hub(hub, GEMMA)
    run_id = run_ids[0]
    before = list(RunManifest.objects.filter(run_id=run_id).values_list("version", flat=True))
    attempts = Run.objects.get(run_id=run_id).verification_attempts

    manifest_fault("raise", times=1)
    with pytest.raises(OperationalError):
        check_run_weights(run_id)
    # Nothing of the verdict stayed: the run is pending as before, no version was added.
    run = Run.objects.get(run_id=run_id)
    assert (run.verification, run.trust, run.verification_attempts) == (
        "pending",
        "pending",
        attempts,
    )
    assert list(RunManifest.objects.filter(run_id=run_id).values_list("version", flat=True)) == (
        before
    )
    assert latest_standing(run_id)["verification"] == "pending"

    # Checked again (the fault is over): the verdict and the version saying it, together.
    assert check_run_weights(run_id) == "verified"
    run = Run.objects.get(run_id=run_id)
    assert run.verification == "verified"
    assert latest_standing(run_id)["verification"] == "verified"
    assert latest_standing(run_id)["trust"] == run.trust


def test_a_worker_retries_a_weight_check_whose_database_connection_is_cut(
    deployed_board,  # noqa: F811 (the fixture imported above)
    hub,
    manifest_fault,
):
    """The server ends the worker's connection mid-verdict, twice: the task is retried like a
    Hub error (it was dropped as unexpected), and the run ends verified under a manifest
    version that says so."""
    model = DEMO_MODELS[0]
    put_on_hub(hub, model)
    manifest_fault("terminate", times=2)
    pod = PodClient(deployed_board, timeout=60)
    benchmark_id = upload_text_and_perf(pod, model, started="2026-10-20T10:00:00Z")
    run_ids = list(
        Run.objects.filter(benchmark__public_id=benchmark_id).values_list("run_id", flat=True)
    )

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if not Run.objects.filter(run_id__in=run_ids, verification="pending").exists():
            break
        time.sleep(0.5)
    assert manifest_fault.faults_made() >= 3  # two connections cut, then the fault let go
    for run_id in run_ids:
        run = Run.objects.get(run_id=run_id)
        assert run.verification == "verified", run.verification_note
        assert latest_standing(run_id)["verification"] == "verified"
        assert latest_standing(run_id)["trust"] == run.trust


# --- queues ----------------------------------------------------------------------------------


@pytest.fixture
def on_redis(postgres, settings):
    """This process publishes to the Redis broker (not eager), as a web process does."""
    from config.celery import app

    if not redis_answers(REDIS_URL):
        from tests.conftest import missing_service

        missing_service(f"needs Redis at {REDIS_URL}")
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    saved = (app.conf.task_always_eager, app.conf.broker_url)
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = REDIS_URL
    app.conf.task_always_eager, app.conf.broker_url = False, REDIS_URL
    app._pool = None
    app.amqp._producer_pool = None
    yield client
    app.conf.task_always_eager, app.conf.broker_url = saved
    app._pool = None
    app.amqp._producer_pool = None
    client.flushdb()


def start_worker(*args: str, env: dict | None = None) -> subprocess.Popen:
    db = connection.settings_dict
    env = os.environ | {
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": REDIS_URL,
        **(env or {}),
    }
    return spawn(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--loglevel=INFO",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            *args,
        ],
        env,
    )


def wait_until(condition, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_recomputes_of_one_class_coalesce_into_one_queued_task(on_redis):
    from board.models import HardwareClass
    from board.tasks import recompute_read_models

    box = HardwareClass.objects.create(slug="box", name="Box", family="other")
    other = HardwareClass.objects.create(slug="other-box", name="Other box", family="other")
    for _ in range(200):
        recompute_read_models.delay(box.pk, None)
    assert on_redis.llen("celery") == 1  # 200 commits of one class: one recompute queued
    for _ in range(50):
        recompute_read_models.delay(other.pk, None)
    assert on_redis.llen("celery") == 2

    worker = start_worker("--pool=solo")
    try:
        assert wait_until(lambda: on_redis.llen("celery") == 0 and not on_redis.keys("*queued*"))
        time.sleep(1)  # the last one runs to its end
    finally:
        output = stop(worker)
        print(output[-3000:])
    assert output.count("] succeeded") == 2
    # Started, each cleared its marker: the next commit queues the next recompute.
    recompute_read_models.delay(box.pk, None)
    assert on_redis.llen("celery") == 1


def test_weight_checks_do_not_wait_behind_recomputes(on_redis, pod, hub):
    from board.tasks import recompute_read_models

    put_on_hub(hub, GEMMA)
    for class_id in range(1_000_000, 1_000_300):  # 300 recomputes of distinct classes first
        recompute_read_models.delay(class_id, None)
    answers = submit_job(pod, core_job(GEMMA))  # then a job: its checks queued after them
    run_ids = [answer.body["run_id"] for answer in answers]
    # Each answer's tasks are published once it is sent.
    assert wait_until(lambda: on_redis.llen("weights") == len(run_ids), seconds=10)
    assert on_redis.llen("celery") >= 300

    # The worker as `make prod` and compose start it (no queue named): it consumes both.
    worker = start_worker("--pool=solo", env={"AEON_HF_ENDPOINT": hub.endpoint})
    try:
        assert wait_until(
            lambda: not Run.objects.filter(run_id__in=run_ids, verification="pending").exists(),
            seconds=120,
        )
        behind = on_redis.llen("celery")
    finally:
        print(stop(worker)[-3000:])
    assert set(Run.objects.filter(run_id__in=run_ids).values_list("verification", flat=True)) == {
        "verified"
    }
    # The checks were taken in turn with the recomputes, not after all of them.
    assert behind >= 300 - 3 * len(run_ids), behind


# --- the sweep, the visibility timeout --------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_run_left_pending_by_a_fault_is_sent_again_within_minutes(pod, hub, settings):
    from submissions.tasks import sweep_pending_weight_checks

    # Minutes, not hours: the beat sweeps every minute, a few minutes past a run's due time.
    assert settings.CELERY_BEAT_SCHEDULE["sweep-pending-weight-checks"]["schedule"] <= 60
    assert settings.AEON_WEIGHT_SWEEP_GRACE_SECONDS <= 300

    hub.fail_next(GEMMA.hf_repo, 503, times=50)  # each check made one attempt, then deferred
    run_ids = [answer.body["run_id"] for answer in submit_job(pod, core_job(GEMMA))]
    hub.recover(GEMMA.hf_repo)
    put_on_hub(hub, GEMMA)
    assert sweep_pending_weight_checks() == 0  # just committed: their retries are running

    now = timezone.now()
    grace = settings.AEON_WEIGHT_SWEEP_GRACE_SECONDS
    first = settings.AEON_WEIGHT_RETRY_FIRST_SECONDS
    lost, dropped = run_ids
    # Its next attempt, after six failed ones, is not due yet: left to its own retry.
    Run.objects.filter(run_id=dropped).update(
        committed_at=now - timedelta(seconds=grace + 600), verification_attempts=6
    )
    # Its retry (after `first` seconds) was lost with the fault: due, sent again.
    Run.objects.filter(run_id=lost).update(committed_at=now - timedelta(seconds=first + grace + 5))
    assert sweep_pending_weight_checks() == 1
    assert Run.objects.get(run_id=lost).verification == "verified"
    assert Run.objects.get(run_id=dropped).verification == "pending"
    # A check dropped before its first attempt (the database down at the time), minutes ago.
    Run.objects.filter(run_id=dropped).update(
        committed_at=now - timedelta(seconds=grace + 5), verification_attempts=0
    )
    assert sweep_pending_weight_checks() == 1
    assert Run.objects.get(run_id=dropped).verification == "verified"


def test_a_dead_workers_tasks_come_back_well_before_two_hours(settings):
    """With acks_late a task whose worker died returns after the broker's visibility timeout:
    minutes now. Nothing a task keeps waiting inside the broker (a retry's countdown) may be
    as long, or a second worker would take it meanwhile."""
    from config.celery import app
    from submissions import tasks

    visibility = app.conf.broker_transport_options["visibility_timeout"]
    assert visibility <= 15 * 60
    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
    waits = (tasks.IN_TASK_RETRY_SECONDS, tasks.DATABASE_RETRY_MAX_SECONDS, 300)
    assert max(waits) < visibility  # 300: durable_task's longest backoff (config/celery.py)


# --- readiness and the evidence store on a full disk -------------------------------------------


@pytest.fixture
def small_disk(tmp_path, settings):
    """A real 1 MiB file system for the evidence store (tmpfs; mounting needs root)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,nr_inodes=4096", "tmpfs", str(mount)],
        capture_output=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {done.stderr.decode()[:200]}")
    settings.AEON_BLOB_DIR = mount / "blobs"
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_fails_readiness_and_leaves_no_temporary_file(client, small_disk):
    from evidence.blobstore import BlobStoreUnavailable, blob_store
    from submissions.ingest.evidence import spool_body

    assert client.get("/readyz").json()["checks"]["blob_store"] == "ok"
    blob_store().put(b"first bundle")
    (small_disk / "blobs" / ".ready").write_bytes(b"ok")  # what the old probe rewrote

    filler = small_disk / "filler"
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"x" * 4096)
        except OSError:
            pass  # full
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["checks"]["blob_store"].startswith("error")
    # Rewriting the existing 2-byte file still works on the full disk: that probe saw nothing.
    (small_disk / "blobs" / ".ready").write_bytes(b"ok")

    for n in range(5):
        with pytest.raises(BlobStoreUnavailable):
            blob_store().put(os.urandom(8192 + n))
        with pytest.raises(BlobStoreUnavailable):  # a big body's spool, on the same volume
            spool_body(os.urandom(8192 + n))
    left = [
        p.name
        for p in small_disk.rglob("*")
        if p.name.startswith((".incoming-", ".ready-", "body-"))
    ]
    assert left == []

    filler.unlink()
    assert client.get("/readyz").json()["checks"]["blob_store"] == "ok"
    assert [p.name for p in small_disk.rglob(".ready-*")] == []
