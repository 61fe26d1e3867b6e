"""The weight check runs in a real Celery worker on Redis, end to end from an HTTP upload: the
board and the worker run as their own processes, as deployed, sharing the test database."""

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.db import connection

from board.models import Run
from demo.bundles import DEMO_MODELS, job_bundles, weights_for
from demo.podclient import PodClient
from tests.processes import free_port, spawn

ROOT = Path(__file__).resolve().parent.parent
REDIS_URL = os.environ.get("AEON_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def redis_answers(url: str) -> bool:
    import redis

    try:
        return redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError:
        return False


def stop(process: subprocess.Popen) -> str:
    process.terminate()
    try:
        output, _ = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
    return output or ""


@pytest.fixture
def deployed_board(postgres, hub, tmp_path):
    """A board web process and a Celery worker process on Redis; yields the board's URL."""
    from tests.conftest import missing_service

    if not redis_answers(REDIS_URL):
        missing_service(f"needs Redis at {REDIS_URL}")
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    db = connection.settings_dict
    env = os.environ | {
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": REDIS_URL,
        "CACHE_URL": REDIS_URL,  # cached answers shared by every process, as deployed
        "AEON_HF_ENDPOINT": hub.endpoint,
        "AEON_WEIGHT_RETRY_FIRST_SECONDS": "1",
        "AEON_DATA_DIR": str(tmp_path),
    }
    port = free_port()
    processes = [
        spawn(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--pool=solo",
                "--loglevel=INFO",
                "--without-heartbeat",
                "--without-gossip",
                "--without-mingle",
            ],
            env,
        ),
        spawn(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            env,
        ),
    ]
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(url + "/readyz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        yield url
    finally:
        for process in processes:
            print(stop(process)[-3000:])


def wait_for_verdict(pod, benchmark_id: str, seconds: float = 90) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        answer = pod.send("GET", f"/api/v1/benchmarks/{benchmark_id}").body
        if answer["verification"]["verdict"] != "pending":
            return answer
        time.sleep(0.5)
    return answer


def upload_text_and_perf(pod, model, started: str, *, verified: bool = False) -> str:
    pod.enroll()
    bundles = job_bundles(model, started=started, with_agentic=False)
    answers = [
        pod.submit_run(name, suite, board, bundle)
        for board, suite, name, bundle in bundles
        if suite in ("aeon-suite-v4", "aeon-perf-v1")
    ]
    assert all(answer.status == 200 for answer in answers), [a.body for a in answers]
    # The worker, not the request, decides: the answer says pending (eager Celery: verified).
    assert {answer.body["verification"] for answer in answers} == {
        "verified" if verified else "pending"
    }
    return answers[0].body["benchmark_id"]


def test_a_worker_on_redis_verifies_an_uploaded_job_against_the_hub(deployed_board, hub):
    model = DEMO_MODELS[0]
    per_file, _ = weights_for(model)
    hub.add_repo(model.hf_repo, model.hf_revision, per_file)
    hub.add_repo(model.drafter_repo, model.drafter_revision, {"model.safetensors": None})
    pod = PodClient(deployed_board, timeout=60)

    benchmark_id = upload_text_and_perf(pod, model, "2026-11-20T08:00:00Z")
    benchmark = wait_for_verdict(pod, benchmark_id)

    assert benchmark["verification"]["verdict"] == "verified"
    assert benchmark["trust"] == "attested"
    assert benchmark["ranked"] is True
    assert any(
        path.startswith(f"/api/models/{model.hf_repo}/revision/{model.hf_revision}")
        for _, path in hub.requests
    )


def test_a_worker_retries_with_backoff_when_the_hub_answers_503(deployed_board, hub):
    model = DEMO_MODELS[1]
    per_file, _ = weights_for(model)
    hub.add_repo(model.hf_repo, model.hf_revision, per_file)
    if model.drafter_repo:
        hub.add_repo(model.drafter_repo, model.drafter_revision, {"model.safetensors": None})
    hub.fail_next(model.hf_repo, 503, times=2)
    pod = PodClient(deployed_board, timeout=60)

    benchmark_id = upload_text_and_perf(pod, model, "2026-11-21T08:00:00Z")
    benchmark = wait_for_verdict(pod, benchmark_id)

    assert benchmark["verification"]["verdict"] == "verified"
    weight_requests = [
        path for _, path in hub.requests if path.startswith(f"/api/models/{model.hf_repo}/")
    ]
    assert len(weight_requests) >= 3  # two 503s, then the answer (cached for the second run)


def test_a_rebuild_queues_the_weight_checks_it_leaves_pending_for_the_worker(
    postgres, hub, pod, blob_dir, tmp_path
):
    """The replay marks runs pending; once it commits, their checks go to the broker, and a
    worker settles them (from the per-commit cache: the Hub is not asked again)."""
    from tests.conftest import missing_service

    if not redis_answers(REDIS_URL):
        missing_service(f"needs Redis at {REDIS_URL}")
    import redis

    broker = redis.Redis.from_url(REDIS_URL)
    broker.flushdb()
    model = DEMO_MODELS[0]
    per_file, _ = weights_for(model)
    hub.add_repo(model.hf_repo, model.hf_revision, per_file)
    hub.add_repo(model.drafter_repo, model.drafter_revision, {"model.safetensors": None})
    benchmark_id = upload_text_and_perf(pod, model, "2026-11-22T08:00:00Z", verified=True)
    run_ids = set(Run.objects.values_list("run_id", flat=True))
    asked = len(hub.requests)

    db = connection.settings_dict
    env = os.environ | {
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": REDIS_URL,
        "AEON_HF_ENDPOINT": hub.endpoint,
        "AEON_DATA_DIR": str(tmp_path),
        "AEON_BLOB_DIR": str(blob_dir),
    }
    rebuilt = subprocess.run(
        [sys.executable, "manage.py", "rebuild_board"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rebuilt.returncode == 0, rebuilt.stderr

    assert set(Run.objects.values_list("verification", flat=True)) == {"pending"}
    # Weight checks have their own queue (docs/operations.md §Background work).
    queued = [json.loads(message) for message in broker.lrange("weights", 0, -1)]
    assert {m["headers"]["task"] for m in queued} == {"submissions.tasks.verify_weights"}
    assert {m["headers"]["argsrepr"] for m in queued} == {repr((run_id,)) for run_id in run_ids}

    worker = spawn(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo"]
        + ["--without-heartbeat", "--without-gossip", "--without-mingle"],
        env,
    )
    try:
        benchmark = wait_for_verdict(pod, benchmark_id)
    finally:
        print(stop(worker)[-3000:])
    assert benchmark["verification"]["verdict"] == "verified"
    assert len(hub.requests) == asked
