"""Board reads from a streaming replica, ingest and fresh answers from the primary
(docs/scale-out.md §Read replica), on a real second PostgreSQL cluster: `pg_basebackup -R` of
the test database's server, on port 18350, with WAL replay paused and resumed by the tests.

The board runs as its own process with `DATABASE_REPLICA_URL` set, as deployed. Pausing replay
makes the replica a visibly stale copy: whatever a request shows tells which copy answered."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.db import connection

from board.models import BoardGeneration, Run
from config.dbrouter import PRIMARY, REPLICA, ReplicaRouter, _read_from
from demo.podclient import PodClient
from submissions.models import DeviceKey
from tests.conftest import missing_service
from tests.podchannel import LIVE_DB, MODEL, TEXT_SUITE, job_sig, small_content
from tests.processes import free_port, spawn
from tests.replica_cluster import ClusterUnavailable, ReplicaCluster
from tests.test_celery_worker import redis_answers

pytestmark = [LIVE_DB, pytest.mark.postgres]

REDIS_URL = os.environ.get("AEON_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
REPLICA_PORT = int(os.environ.get("AEON_TEST_REPLICA_PORT", "18350"))
RUNS = Run._meta.db_table
BOARD_APP = "aeon-board-under-test"  # the board's application_name on the replica
GENERATION_CHECK = f"SELECT number FROM {BoardGeneration._meta.db_table} WHERE id = 1"
KEYS = DeviceKey._meta.db_table


@pytest.fixture(scope="module")
def replica(django_db_setup, django_db_blocker):
    """The second cluster, streaming from the primary that holds the test database."""
    if connection.vendor != "postgresql":
        missing_service("needs PostgreSQL: set DATABASE_URL=postgres://…")
    db = connection.settings_dict
    cluster = ReplicaCluster(
        host=db["HOST"] or "127.0.0.1",
        port=int(db["PORT"] or 5432),
        user=db["USER"] or "postgres",
        dbname=db["NAME"],
        replica_port=REPLICA_PORT,
    )
    try:
        cluster.start()
    except ClusterUnavailable as exc:
        cluster.stop()
        missing_service(f"needs a streaming replica: {exc}")
    except BaseException:
        cluster.stop()  # never leave a half-started cluster running
        raise
    try:
        yield cluster
    finally:
        cluster.resume_replay_if_running()
        cluster.stop()


@pytest.fixture(scope="module")
def replica_board(replica):
    """The board as its own process, reading from the replica; yields its URL."""
    db = connection.settings_dict
    port = free_port()
    data_dir = Path(tempfile.mkdtemp(prefix="aeon-replica-board-"))
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("CELERY_BROKER_URL", "CACHE_URL", "DATABASE_REPLICA_URL")
    } | {
        "AEON_ENV": "development",
        "DATABASE_URL": f"postgres://{replica.user}@{replica.host}:{replica.port}/{db['NAME']}",
        "DATABASE_REPLICA_URL": replica.url(BOARD_APP),
        "AEON_DATA_DIR": str(data_dir),
        "AEON_HF_ENDPOINT": "http://127.0.0.1:9",
        "AEON_HF_TIMEOUT_SECONDS": "2",
    }
    if redis_answers(REDIS_URL):  # cached answers shared in Redis, as deployed
        import redis

        redis.Redis.from_url(REDIS_URL).flushdb()
        env["CACHE_URL"] = REDIS_URL
    server = spawn(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            if server.poll() is not None:
                pytest.fail(f"the board exited at start:\n{server.stdout.read()[-3000:]}")
            try:
                if fetch(url + "/healthz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.25)
        yield url
    finally:
        server.terminate()
        try:
            server.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()
        shutil.rmtree(data_dir, ignore_errors=True)


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def read_json(url: str) -> dict:
    status, text = fetch(url)
    assert status == 200, text[:500]
    return json.loads(text)


def committed_run(board_url: str, scope: str) -> tuple[PodClient, str, dict]:
    pod = PodClient(board_url, timeout=60)
    assert pod.enroll().status == 200
    sig = job_sig(scope)
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    answer = pod.submit(session, small_content(3, job_sig=sig))
    assert answer.status == 200, answer.body
    return pod, sig, answer.body


def board_queries(replica: ReplicaCluster, mark: int) -> list[str]:
    """What the board asked the replica since `mark`, less the session set-up of a connection."""
    return [
        statement
        for statement in replica.statements_since(mark, BOARD_APP)
        if not statement.startswith("SELECT set_config(")
    ]


def on_replica_count(replica: ReplicaCluster, table: str, column: str, value: str) -> int:
    return replica.on_replica(f"SELECT count(*) FROM {table} WHERE {column} = %s", (value,))[0][0]


def test_ingest_and_the_fresh_run_come_from_the_primary_while_the_replica_lags(
    postgres, replica, replica_board
):
    replica.wait_for_replay()
    replica.pause_replay()
    try:
        # Every step reads what the one before wrote: from the replica the key would be
        # unknown (403), the session missing (404), the run page and job status empty.
        mark = replica.log_mark()
        pod, sig, answer = committed_run(replica_board, "replica-lag")
        run_id = answer["run_id"]
        assert answer["url"] == f"{replica_board}/runs/{run_id}/"
        assert pod.job_status(sig).body == {"exists": True, "run_id": run_id, "status": "committed"}
        assert board_queries(replica, mark) == []  # ingest never asks the replica

        mark = replica.log_mark()
        status, page = fetch(answer["url"])
        assert status == 200 and run_id in page
        assert read_json(f"{replica_board}/api/v1/runs/{run_id}")["n_results"] == 3
        benchmark = read_json(f"{replica_board}/api/v1/benchmarks/{answer['benchmark_id']}")
        assert run_id in json.dumps(benchmark)  # a cached answer, filled from the primary
        # The board asked the replica for its generation only, found it behind, and read
        # everything from the primary.
        assert set(board_queries(replica, mark)) == {GENERATION_CHECK}

        fingerprint = DeviceKey.objects.get(public_key=pod.public_key).fingerprint
        assert on_replica_count(replica, KEYS, "fingerprint", fingerprint) == 0
        assert on_replica_count(replica, RUNS, "run_id", run_id) == 0
    finally:
        replica.resume_replay()
    replica.wait_for_replay()
    assert on_replica_count(replica, RUNS, "run_id", run_id) == 1


def test_board_pages_and_read_apis_are_served_by_the_replica(postgres, replica, replica_board):
    _, _, answer = committed_run(replica_board, "replica-reads")
    run_id = answer["run_id"]
    replica.wait_for_replay()
    api = f"{replica_board}/api/v1/runs/{run_id}"
    page = f"{replica_board}/runs/{run_id}/"
    note = "written on the primary behind the board"
    assert read_json(api)["verification_note"] != note

    replica.pause_replay()
    try:
        # A row changed on the primary without a generation bump: only replication brings it.
        replica.on_primary(
            f"UPDATE {RUNS} SET verification_note = %s WHERE run_id = %s", (note, run_id)
        )
        mark = replica.log_mark()
        for probe in range(3):  # fresh paths: no cached answer stands in for the replica
            assert read_json(f"{api}?probe={probe}")["verification_note"] != note
            assert note not in fetch(f"{page}?probe={probe}")[1]
        asked = board_queries(replica, mark)
        assert sum(RUNS in statement for statement in asked) >= 6  # each read, on the replica
    finally:
        replica.resume_replay()
    replica.wait_for_replay()
    assert read_json(f"{api}?probe=after")["verification_note"] == note
    assert note in fetch(f"{page}?probe=after")[1]


def test_a_replica_that_does_not_answer_leaves_the_board_on_the_primary(
    postgres, replica, replica_board
):
    """Last in this module: it stops the replica."""
    replica.stop()

    _, _, answer = committed_run(replica_board, "replica-down")

    status, page = fetch(answer["url"])
    assert status == 200 and answer["run_id"] in page
    assert read_json(f"{replica_board}/api/v1/runs/{answer['run_id']}")["n_results"] == 3


def test_reads_inside_a_transaction_and_migrations_stay_on_the_primary():
    from django.db import transaction

    router = ReplicaRouter()
    token = _read_from.set(REPLICA)  # a board read that chose the replica
    try:
        assert router.db_for_read(Run) == REPLICA
        with transaction.atomic():
            assert router.db_for_read(Run) == PRIMARY
        assert router.db_for_write(Run) == PRIMARY
    finally:
        _read_from.reset(token)
    assert router.db_for_read(Run) == PRIMARY  # tasks, commands, the pod channel
    assert router.allow_migrate(PRIMARY, "board") is True
    assert router.allow_migrate(REPLICA, "board") is False
