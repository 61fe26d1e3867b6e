"""`make prod`'s stack end to end (docs/operations.md): Caddy in front of gunicorn, a Celery
worker and one beat on Redis and PostgreSQL, started by `make prod` itself (supervisord) on
loopback, used the way pods and visitors use it — a comprehensive benchmark uploaded by the signing pod client, the weight check against
the Hugging Face stand-in, the pages and champion APIs read over HTTP; a worker killed in the
middle of a weight check; a replica drained while an upload is in flight; a backup restored into
a scratch database that answers the same champions; and Ctrl-C stopping every part."""

import http.client
import json
import os
import signal
import subprocess
import time
from urllib.parse import urlsplit, urlunsplit

import pytest

from demo.bundles import DEMO_MODELS, demo_model, job_bundles
from demo.podclient import USER_AGENT, PodClient
from tests.boardjobs import core_job, put_on_hub, read_api, submit_job
from tests.conftest import missing_service
from tests.hf_standin import HubStandIn
from tests.processes import alive, descendants, free_port
from tests.prodstack import (
    ROOT,
    Stack,
    start_make_prod,
    stop_leftovers,
    wait_until_ready,
)

REDIS_URL = os.environ.get("AEON_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
GEMMA = demo_model("gemma-4-26b-a4b-dflash-spark")  # 816 tok/s on coding @ c64
QWEN = demo_model("qwen3-next-80b-a3b-thinking-nvfp4-spark")
SPARK = "dgx-spark-x1"
VISIBILITY_SECONDS = 5  # a task of a killed worker goes back to the queue after this

pytestmark = [pytest.mark.postgres, pytest.mark.celery_worker]


def caddy_in_front(stack: Stack) -> str:
    """`make prod` puts Caddy (deploy/Caddyfile) in front of gunicorn when caddy is on PATH."""
    if stack.ready()["front"] != "caddy":
        missing_service("needs caddy on PATH (apt-get install caddy)")
    assert stack.replica() != stack.url
    return stack.url


def services_or_skip() -> str:
    """The PostgreSQL server of DATABASE_URL and the test Redis; the stack's database URL."""
    import redis

    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        missing_service("needs PostgreSQL: set DATABASE_URL=postgres://…")
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError:
        missing_service(f"needs Redis at {REDIS_URL}")
    redis.Redis.from_url(REDIS_URL).flushdb()
    parts = urlsplit(url)
    name = parts.path.lstrip("/") + "_prodstack"
    stack_url = urlunsplit(parts._replace(path=f"/{name}"))
    drop_database(stack_url)
    return stack_url


def drop_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')


@pytest.fixture(scope="module")
def cache_redis(tmp_path_factory):
    """The answer cache's Redis as production runs it (docs/operations.md §The answer cache): a
    server of its own, apart from the broker's, with a memory limit and LRU eviction."""
    port = free_port()
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--maxmemory",
            "32mb",
            "--maxmemory-policy",
            "allkeys-lru",
            "--dir",
            str(tmp_path_factory.mktemp("cache-redis")),
        ],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    import redis

    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 30
    while True:
        try:
            redis.Redis.from_url(url, socket_connect_timeout=1).ping()
            break
        except redis.RedisError:
            assert server.poll() is None and time.monotonic() < deadline, "redis-server failed"
            time.sleep(0.1)
    try:
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, cache_redis):
    database_url = services_or_skip()
    data_dir = tmp_path_factory.mktemp("prod")
    log = data_dir / "make-prod.log"
    port = free_port()
    ours = ("AEON_", "DJANGO_", "CELERY_", "CACHE_URL", "DATABASE_URL", "SECRET_KEY", "DEBUG")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    with HubStandIn() as hub:
        env |= {
            "PORT": str(port),
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": REDIS_URL,
            "CACHE_URL": cache_redis,
            "AEON_DATA_DIR": str(data_dir / "var"),
            "AEON_HF_ENDPOINT": hub.endpoint,
            "AEON_HF_TIMEOUT_SECONDS": "120",  # a held check waits, it does not time out
            "AEON_WEIGHT_RETRY_FIRST_SECONDS": "1",
            "AEON_BROKER_VISIBILITY_TIMEOUT": str(VISIBILITY_SECONDS),
            "WEB_CONCURRENCY": "2",
            "CELERY_CONCURRENCY": "2",
        }
        process = start_make_prod(env, log)
        found = Stack(
            f"http://127.0.0.1:{port}", process, log, data_dir / "var", database_url, hub, env
        )
        try:
            wait_until_ready(process, log)
            yield found
        finally:
            stop_leftovers(process)


def wait_for_verdict(stack: Stack, benchmark_id: str, seconds: float = 120) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        answer = read_api(stack.url, f"/api/v1/benchmarks/{benchmark_id}").body
        if answer["verification"]["verdict"] != "pending" or time.monotonic() > deadline:
            return answer
        time.sleep(0.5)


def test_the_stack_takes_a_comprehensive_benchmark_and_crowns_it(stack):
    ready = read_api(stack.url, "/readyz")
    assert (ready.status, ready.body["ok"]) == (200, True), ready.text
    assert set(ready.body["checks"].values()) == {"ok"}
    deadline = time.monotonic() + 60  # `ready` is said once the board answers /readyz
    while not (parts := {e["part"] for e in stack.lines()}) >= {"worker", "beat"}:
        assert time.monotonic() < deadline, parts
        time.sleep(0.5)
    lines = stack.lines()
    assert any("SECRET_KEY not set" in e["message"] for e in lines)
    assert any("AEON_BOARD_KEY_FILE not set" in e["message"] for e in lines)
    assert {e["part"] for e in lines} >= {"prod", "setup", "web", "worker", "beat"}
    for line in stack.log.read_text().splitlines():  # make prod prints JSON lines only
        assert isinstance(json.loads(line), dict), line
    # supervisord writes no log of its own beside these (the parts' output is printed)
    assert {p.name for p in stack.data_dir.glob("*.log")} <= {"supervisord.log", "caddy.log"}
    # Probes answered 200 (Caddy's every 2 s, `ready`'s) leave no access line; others do.
    assert read_api(stack.url, "/api/v1/hardware-classes").status == 200
    while not (access := [e for e in stack.lines() if e.get("logger") == "gunicorn.access"]):
        assert time.monotonic() < deadline, "no access line"
        time.sleep(0.5)
    assert {"remote", "request", "status", "ms"} <= set(access[-1])
    probes = [e for e in access if e["request"].split()[1] in ("/healthz", "/readyz")]
    assert [e for e in probes if e["status"] == 200] == []

    put_on_hub(stack.hub, GEMMA)
    pod = PodClient(stack.url, timeout=120)
    assert pod.enroll().status == 200
    job = job_bundles(GEMMA)
    assert {suite for _, suite, _, _ in job} >= {"aeon-suite-v4", "aeon-agentic-v2.5"}
    answers = submit_job(pod, job)
    assert {a.body["verification"] for a in answers} == {"pending"}  # the worker decides
    assert answers[0].body["url"].startswith(f"{stack.url}/runs/")  # the configured site
    benchmark_id = answers[0].body["benchmark_id"]

    benchmark = wait_for_verdict(stack, benchmark_id)
    assert benchmark["verification"]["verdict"] == "verified", benchmark["verification"]
    assert benchmark["ranked"] is True
    page = read_api(stack.url, f"/benchmarks/{benchmark_id}/")
    assert page.status == 200 and GEMMA.hf_repo.lower() in page.text

    crown = read_api(stack.url, f"/api/v1/champions?hardware={SPARK}&axis=throughput").body
    assert [(c["benchmark_id"], c["value"]) for c in crown["champions"]] == [(benchmark_id, 816.0)]
    recipes = pod.send("GET", "/api/recipes/champions").body["champions"]
    assert [(c["hf_repo"], c["peak_agg_tps"]) for c in recipes] == [(GEMMA.hf_repo, 816.0)]


def test_a_weight_check_cut_short_by_a_killed_worker_completes_after_its_restart(stack):
    put_on_hub(stack.hub, QWEN)
    stack.hub.hold(QWEN.hf_repo)
    asked = stack.hub.asked_about(QWEN.hf_repo)
    pod = PodClient(stack.url, timeout=120)
    pod.enroll()
    answers = submit_job(pod, core_job(QWEN))
    benchmark_id = answers[0].body["benchmark_id"]
    deadline = time.monotonic() + 60
    while stack.hub.asked_about(QWEN.hf_repo) == asked:  # the worker is inside the check
        assert time.monotonic() < deadline, "the worker never asked the Hub"
        time.sleep(0.2)

    killed = stack.worker_pid()
    os.kill(killed, signal.SIGKILL)
    while alive(killed):
        time.sleep(0.1)
    stack.hub.release(QWEN.hf_repo)
    benchmark = read_api(stack.url, f"/api/v1/benchmarks/{benchmark_id}").body
    assert benchmark["verification"]["verdict"] == "pending"  # it died with the worker

    benchmark = wait_for_verdict(stack, benchmark_id, seconds=120)
    assert benchmark["verification"]["verdict"] == "verified", benchmark["verification"]
    exited = {"message": "worker exited: starting it again", "pid": killed}
    assert any(exited.items() <= e.items() for e in stack.lines())
    deadline = time.monotonic() + 60  # supervisord says `started` once it has run 10 s
    while stack.worker_pid() == killed:
        assert time.monotonic() < deadline, "no new worker started"
        time.sleep(0.5)


def test_a_draining_replica_answers_503_on_healthz_and_finishes_the_upload_in_flight(stack):
    pod = PodClient(stack.url, timeout=120)
    pod.enroll()
    session = pod.open_run(GEMMA.hf_repo, "aeon-suite-v4", "text")
    [(_, _, _, bundle)] = [e for e in job_bundles(GEMMA, started="2026-11-01T09:00:00Z")][:1]
    body = json.dumps(pod.signed_results(session, bundle, final=True)).encode()
    drain = stack.data_dir / "draining"

    connection = http.client.HTTPConnection("127.0.0.1", urlsplit(stack.url).port, timeout=120)
    connection.putrequest("POST", f"/api/v1/runs/{session.run_id}/results")
    for name, value in {
        "User-Agent": USER_AGENT,
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
        "X-Aeon-Run-Token": session.run_token,
    }.items():
        connection.putheader(name, value)
    connection.endheaders()
    connection.send(body[: len(body) // 2])  # the upload is in flight …
    try:
        drain.write_text("")
        health = read_api(stack.replica(), "/healthz")  # what the front asks the replica
        assert (health.status, health.body) == (503, {"ok": False, "draining": True})
        connection.send(body[len(body) // 2 :])  # … and completes
        response = connection.getresponse()
        answer = json.loads(response.read())
        assert response.status == 200, answer
        assert answer["ok"] is True and answer["run_id"] == session.run_id
    finally:
        connection.close()
        drain.unlink(missing_ok=True)
    assert read_api(stack.replica(), "/healthz").body == {"ok": True}
    stack.served_again()


def wait_until_the_worker_is_idle(seconds: float = 120) -> None:
    """Until no task is queued and none is being run (tasks are acknowledged late: one in
    progress stays in kombu's `unacked` hash): a read-model rewrite queued by an earlier commit
    then no longer changes what the live board answers."""
    import redis

    broker = redis.Redis.from_url(REDIS_URL)
    deadline = time.monotonic() + seconds
    while broker.llen("celery") or broker.hlen("unacked"):
        assert time.monotonic() < deadline, "the worker never went idle"
        time.sleep(0.1)


def test_a_backup_restored_into_a_scratch_database_answers_the_same_champions(stack, tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AEON_", "DJANGO_", "CELERY_", "CACHE_URL", "DATABASE_URL"))
    }
    secret = (stack.data_dir / "secret-key").read_text().strip()
    env |= {
        "PATH": f"{ROOT / '.venv' / 'bin'}:{env['PATH']}",
        "AEON_ENV": "production",
        "SECRET_KEY": secret,
        "AEON_SITE_URL": stack.url,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "AEON_DATA_DIR": str(stack.data_dir),
        "AEON_BOARD_KEY_FILE": str(stack.data_dir / "board-key.pem"),
        "DATABASE_URL": stack.database_url,
    }
    backup = tmp_path / "backup"
    # The restored board is compared with the live one: nothing may still be rewriting it.
    wait_until_the_worker_is_idle()
    done = subprocess.run(
        ["deploy/backup.sh", str(backup)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (backup / "db.dump").stat().st_size > 0
    assert "bundles copied" in done.stdout

    restore_url = stack.database_url + "_restore"  # a scratch name of this test's own
    try:
        restored = subprocess.run(
            ["deploy/restore-verify.sh", str(backup)],
            cwd=ROOT,
            env=env | {"RESTORE_DATABASE_URL": restore_url, "LIVE_URL": stack.url, "SAMPLE": "100"},
            capture_output=True,
            text=True,
        )
    finally:
        drop_database(restore_url)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert "restore verified" in restored.stdout
    report = json.loads(
        restored.stdout[restored.stdout.index("{") : restored.stdout.rindex("}") + 1]
    )
    assert report["bundles_missing"] == []
    assert report["bundles_verified"] >= 8
    # Signed run manifests (docs/trust-anchor.md), checked against the published keys.
    assert report["manifests_verified"] >= 1
    assert report["champions"]["/api/v1/champions"]["count"] > 0
    assert report["champions"]["/api/v1/champions"]["same_as_live"] is True
    assert report["champions"]["/api/recipes/champions"]["same_as_live"] is True


def test_make_prod_keeps_the_answer_cache_out_of_the_brokers_database(tmp_path):
    """Issue 20 point 5: by default the next database of the broker's server; the broker's own
    database is refused before anything starts (docs/operations.md §The answer cache)."""
    from config.prodstack import SetupFailed, cache_beside, check_services, prepared_environment

    assert cache_beside("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/1"
    assert cache_beside("redis://cache.internal:6380") == "redis://cache.internal:6380/1"
    assert cache_beside("redis://127.0.0.1:6379/15") == "redis://127.0.0.1:6379/0"
    base = {"AEON_DATA_DIR": str(tmp_path), "SECRET_KEY": "s", "AEON_BOARD_KEY_FILE": "k.pem"}
    assert prepared_environment(base)["CACHE_URL"] == "redis://127.0.0.1:6379/1"
    shared = prepared_environment(
        base
        | {"CELERY_BROKER_URL": "redis://127.0.0.1:6379", "CACHE_URL": "redis://127.0.0.1:6379/0"}
    )
    with pytest.raises(SetupFailed, match="must not be the broker's database"):
        check_services(shared)


def test_caddy_in_front_refuses_large_bodies_as_json_and_drains_the_replica(stack):
    drain = stack.data_dir / "draining"
    url = caddy_in_front(stack)
    too_large = raw_post(url, "/api/v1/enroll", b"{" + b" " * (2 * 1024 * 1024) + b"}")
    assert too_large[0] == 413
    assert json.loads(too_large[1])["reason"] == "SIZE_EXCEEDED"
    try:
        drain.write_text("")
        deadline = time.monotonic() + 15
        while (answer := read_api(url, "/api/v1/champions")).status == 200:
            assert time.monotonic() < deadline, "caddy kept sending to a draining replica"
            time.sleep(0.2)
        assert answer.status == 503 and answer.body["reason"] == "UNAVAILABLE"
    finally:
        drain.unlink(missing_ok=True)
    stack.served_again()


def test_slow_bodies_to_make_prods_port_leave_ordinary_requests_unaffected(stack):
    """Issue 20 point 4: twelve connections to /api/v1/enroll on `make prod`'s own port sending
    one byte a second, more than the stack's request threads (2 workers x 4), while ten
    ordinary requests are answered; the slow ones are still unanswered when the last ordinary
    answer arrives, so none of them held a thread the ordinary requests needed (Caddy, in
    front, reads a small body whole first; straight to gunicorn they would hold all eight)."""
    import socket
    import threading

    stop = threading.Event()
    url = caddy_in_front(stack)
    port = urlsplit(url).port
    slow = []
    for _ in range(12):
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(
            b"POST /api/v1/enroll HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 120\r\n\r\n{"
        )
        slow.append(sock)

    def trickle():
        while not stop.wait(1.0):
            for sock in slow:
                sock.sendall(b" ")

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    try:
        time.sleep(2)  # every slow body under way
        statuses = [read_api(url, "/api/v1/champions").status for _ in range(10)]
        assert statuses == [200] * 10
        for sock in slow:  # none answered yet: still sending their bodies
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)
    finally:
        stop.set()
        sender.join(timeout=10)
        for sock in slow:
            sock.close()


def test_sixteen_pods_uploading_whole_jobs_at_once_get_no_5xx_and_each_final_commits_once(
    stack,
):
    """Issue 21's budget: sixteen pods, each a key of its own, upload a whole comprehensive job
    at the same moment (a barrier) through the front; no answer is a 5xx (the pods do not retry
    here, so none could be hidden), and each final is one run: as many runs as finals answered,
    none twice for a (key, job)."""
    import threading

    import psycopg

    pods = 16
    models = [DEMO_MODELS[i % len(DEMO_MODELS)] for i in range(pods)]
    for model in {m.key: m for m in models}.values():
        put_on_hub(stack.hub, model)
    start = threading.Barrier(pods)
    answers: list[list] = [[] for _ in range(pods)]
    failures: list[BaseException] = []

    def upload(index: int) -> None:
        try:
            pod = PodClient(stack.url, timeout=300)
            start.wait(timeout=120)
            assert pod.enroll().status == 200
            for board, suite_id, model, bundle in job_bundles(models[index], seed=index):
                answers[index].append(pod.submit_run(model, suite_id, board, bundle))
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)

    threads = [threading.Thread(target=upload, args=(i,)) for i in range(pods)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not failures, failures
    finals = [answer for of_pod in answers for answer in of_pod]
    assert [a.status for a in finals if a.status != 200] == [], [
        (a.status, a.body) for a in finals if a.status != 200
    ]
    run_ids = {answer.body["run_id"] for answer in finals}
    assert len(run_ids) == len(finals) == sum(len(job_bundles(m)) for m in models)
    with psycopg.connect(stack.database_url) as conn:
        stored = conn.execute(
            "SELECT count(*), count(DISTINCT (key_fingerprint, job_sig)) FROM board_run"
            " WHERE run_id = ANY(%s)",
            [sorted(run_ids)],
        ).fetchone()
    assert stored == (len(run_ids), len(run_ids))


def raw_post(url: str, path: str, body: bytes) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", urlsplit(url).port, timeout=60)
    try:
        connection.request("POST", path, body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_sigterm_to_make_prod_stops_every_part_and_leaves_nothing_behind(stack):
    parts = descendants(stack.process.pid)
    # supervisord, its event listener, gunicorn and its workers, the worker, the beat, Caddy
    assert len(parts) >= 7
    stack.process.send_signal(signal.SIGTERM)
    assert stack.process.wait(timeout=200) in (0, 2, -signal.SIGTERM)
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in parts) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [pid for pid in parts if alive(pid)] == []
    assert stack.lines()[-1]["message"] == "stopped"


def test_ctrl_c_stops_make_prod_and_every_part_too(stack):
    """After the SIGTERM test: make prod again on the same database and data folder, stopped
    the way a terminal's Ctrl-C stops it (SIGINT to its whole process group)."""
    assert stack.process.poll() is not None
    log = stack.log.with_name("make-prod-again.log")
    process = start_make_prod(stack.env, log)
    try:
        wait_until_ready(process, log)
        assert "using the local one" in log.read_text()  # the secret made the first time
        parts = descendants(process.pid)
        assert len(parts) >= 7
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=200)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in parts) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [pid for pid in parts if alive(pid)] == []
        assert json.loads(log.read_text().splitlines()[-1])["message"] == "stopped"
    finally:
        stop_leftovers(process)
