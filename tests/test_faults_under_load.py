"""Faults under load (issue 20 point 11, docs/operations.md §Faults under load): `make prod` on a
PostgreSQL cluster and two Redis servers of the test's own (the broker's and the answer cache's,
apart as `make prod` requires), real pods uploading whole jobs from three threads with the real
signed protocol, a reader polling the public reads, and each fault in turn, with a short recovery
between: both Redis servers SIGKILLed and started again, PostgreSQL crashed (`pg_ctl stop -m
immediate`) and started again, the Celery worker SIGKILLed (supervisord starts it again).

Afterwards: every final a pod saw acknowledged is in the database exactly once (0 lost, 0
duplicated), no answer anywhere was a 500 (what the clients saw, and gunicorn's access log), a
503 came only during a fault or just after it, and every run is out of `pending`, its latest
signed manifest saying the same verdict, within a bound after each fault's end.

A full evidence disk is not made here: a small file system needs a root-only mount, and `make
prod`'s store would have to be on it from the start; tests/test_background_faults.py shows it
(uploads 503, `/readyz` 503, no temporary file left).

The sweep's timers are shortened through their settings (docs/operations.md §Background work):
the beat every 2 s, a grace of 5 s, one resend per run every 10 s, a visibility timeout of 10 s;
production keeps its defaults."""

import json
import os
import shutil
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from anchor.models import RunManifest
from board.models import Result, Run
from demo.bundles import demo_model, job_bundles
from demo.podclient import PodClient, PodNetworkError
from tests.boardjobs import fetch, put_on_hub
from tests.conftest import missing_service
from tests.hf_standin import HubStandIn
from tests.private_servers import ClusterUnavailable, PrivateCluster, PrivateRedis
from tests.processes import descendants, free_port
from tests.prodstack import Stack, start_make_prod, stop_leftovers, wait_until_ready

pytestmark = [pytest.mark.postgres, pytest.mark.celery_worker]

MODELS = [
    demo_model("gemma-4-26b-a4b-dflash-spark"),
    demo_model("qwen3-next-80b-a3b-thinking-nvfp4-spark"),
    demo_model("qwen3-14b-fp8-rtx5090"),  # another hardware class
]
FAULT_SECONDS = 4  # how long each service stays down (a pod retries after 1, 2, 4 and 8 s)
RECOVERY_SECONDS = 4  # between one fault's end and the next one's start
AFTER_FAULT_SLACK = 3  # a 503 is allowed to a request sent this long after a fault's end
PENDING_BOUND = 90  # seconds: every run out of pending within this of a fault's end
READS = [
    "/api/v1/benchmarks",
    "/api/recipes/champions",
    "/api/v1/runs/{run_id}",
    "/benchmarks/{benchmark_id}/",
    "/readyz",
]
RUNS = Run._meta.db_table
RESULTS = Result._meta.db_table
MANIFESTS = RunManifest._meta.db_table


# --- the stack on servers of its own -------------------------------------------------------------


@dataclass
class Servers:
    cluster: PrivateCluster
    broker: PrivateRedis
    cache: PrivateRedis
    stack: Stack
    held: int = 0  # the tasks the killed worker held

    def sql(self, statement: str, params=()) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.stack.database_url, connect_timeout=5) as conn:
            return conn.execute(statement, params).fetchall()


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    if shutil.which("redis-server") is None:
        missing_service("needs redis-server on PATH (apt-get install redis-server)")
    cluster = PrivateCluster()
    try:
        cluster.create()
    except ClusterUnavailable as exc:
        cluster.remove()
        missing_service(f"needs a PostgreSQL cluster of its own: {exc}")
    folder = tmp_path_factory.mktemp("faults")
    for name in ("broker", "cache"):
        (folder / name).mkdir()
    # As production runs them (docs/operations.md §The answer cache): the broker keeps its queue
    # on disk and never evicts; the cache evicts and keeps nothing.
    broker = PrivateRedis(
        folder / "broker", "--save", "", "--appendonly", "yes", "--maxmemory-policy", "noeviction"
    )
    cache = PrivateRedis(
        folder / "cache",
        *("--save", "", "--appendonly", "no"),
        *("--maxmemory", "32mb", "--maxmemory-policy", "allkeys-lru"),
    )
    process = None
    try:
        broker.start()
        cache.start()
        with HubStandIn() as hub:
            for model in MODELS:
                put_on_hub(hub, model)
            port = free_port()
            env = stack_environment(port, cluster, broker, cache, hub, folder / "var")
            log = folder / "make-prod.log"
            process = start_make_prod(env, log)
            stack = Stack(
                f"http://127.0.0.1:{port}",
                process,
                log,
                folder / "var",
                env["DATABASE_URL"],
                hub,
                env,
            )
            wait_until_ready(process, log)
            yield Servers(cluster, broker, cache, stack)
    finally:
        if process is not None:
            stop_leftovers(process)
        broker.kill()
        cache.kill()
        cluster.remove()


def stack_environment(port: int, cluster, broker, cache, hub, data_dir: Path) -> dict:
    ours = ("AEON_", "DJANGO_", "CELERY_", "CACHE_URL", "DATABASE_URL", "SECRET_KEY", "DEBUG")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    return env | {
        "PORT": str(port),
        "DATABASE_URL": cluster.url("aeon_faults"),
        "CELERY_BROKER_URL": broker.url,
        "CACHE_URL": cache.url,
        "AEON_DATA_DIR": str(data_dir),
        "AEON_HF_ENDPOINT": hub.endpoint,
        # The sweep's timers, short (docs/operations.md §Background work).
        "AEON_WEIGHT_RETRY_FIRST_SECONDS": "1",
        "AEON_WEIGHT_RETRY_MAX_SECONDS": "4",
        "AEON_WEIGHT_SWEEP_SECONDS": "2",
        "AEON_WEIGHT_SWEEP_GRACE_SECONDS": "5",
        "AEON_WEIGHT_SWEEP_RESEND_SECONDS": "10",
        "AEON_BROKER_VISIBILITY_TIMEOUT": "10",
        "WEB_CONCURRENCY": "2",
        "CELERY_CONCURRENCY": "2",
        # Three pods on one loopback address, each uploading as fast as it can, pass production's
        # limits (600 requests a minute per address, 300 per key, 500 finals a day per key):
        # limits have tests of their own, and a 429 here would only hide what the faults do.
        "AEON_RATE_LIMIT_PER_IP": "100000",
        "AEON_RATE_LIMIT_PER_KEY": "100000",
        "AEON_MAX_FINALS_PER_KEY_DAY": "100000",
    }


# --- what every client saw -------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """One answer a client got, sent at `sent` and answered at `at` (monotonic seconds); status
    None: no answer, a network failure."""

    sent: float
    at: float
    who: str
    path: str
    status: int | None
    reason: str | None = None
    retry_after: str | None = None


@dataclass(frozen=True)
class Acknowledged:
    at: float
    who: str
    job_sig: str
    run_id: str
    benchmark_id: str | None  # not said in a duplicate's answer
    duplicate: bool
    rows: int  # the bundle's result rows


@dataclass
class Journal:
    seen: list[Seen] = field(default_factory=list)
    acknowledged: list[Acknowledged] = field(default_factory=list)
    not_acknowledged: list[str] = field(default_factory=list)
    crashed: list[str] = field(default_factory=list)  # a client thread that raised

    def saw(self, sent: float, who: str, path: str, status, reason=None, headers=None) -> None:
        retry_after = {k.lower(): v for k, v in (headers or {}).items()}.get("retry-after")
        self.seen.append(Seen(sent, time.monotonic(), who, path, status, reason, retry_after))


class RecordingPod(PodClient):
    """The real client, retrying as pods do; every answer it gets is written down on the way
    (the protocol is untouched: what is written is the client's own reading of the answer)."""

    def __init__(self, url: str, journal: Journal, who: str):
        super().__init__(url, timeout=60, retry_like_a_pod=True)
        self.journal, self.who = journal, who

    def _send_once(self, method, path, body, headers):
        sent = time.monotonic()
        try:
            answer = super()._send_once(method, path, body, headers)
        except PodNetworkError as exc:
            self.journal.saw(sent, self.who, path, None, str(exc))
            raise
        self.journal.saw(sent, self.who, path, answer.status, answer.reason, answer.headers)
        return answer


def in_thread(journal: Journal, target, *args) -> threading.Thread:
    """`target(*args)` in a thread of its own; what it raises is written down."""

    def run() -> None:
        try:
            target(*args)
        except BaseException as exc:
            journal.crashed.append(f"{target.__name__}: {exc!r}")
            raise

    thread = threading.Thread(target=run, name=target.__name__, daemon=True)
    thread.start()
    return thread


def upload_jobs(pod: RecordingPod, model, number: int, stop: threading.Event, journal) -> None:
    """Whole jobs (text, agentic, perf: each bundle its own run), one after the other, until
    `stop`; a job started is finished."""
    job = 0
    while not stop.is_set():
        started = f"2026-11-{number + 1:02d}T{job // 60:02d}:{job % 60:02d}:00Z"
        job += 1
        for board, suite_id, name, bundle in job_bundles(model, started=started):
            try:
                answer = pod.submit_run(name, suite_id, board, bundle)
            except (RuntimeError, PodNetworkError) as exc:  # refused or unanswered, retries spent
                journal.not_acknowledged.append(f"{pod.who} {bundle['job_sig']}: {exc}")
                continue
            if answer.status != 200 or answer.body.get("ok") is not True:
                journal.not_acknowledged.append(
                    f"{pod.who} {bundle['job_sig']}: {answer.status} {answer.body}"
                )
                continue
            journal.acknowledged.append(
                Acknowledged(
                    time.monotonic(),
                    pod.who,
                    bundle["job_sig"],
                    answer.body["run_id"],
                    answer.body.get("benchmark_id"),
                    bool(answer.body.get("duplicate")),
                    len(bundle["results"]),
                )
            )


def read_board(url: str, paths: list[str], stop: threading.Event, journal: Journal) -> None:
    """The public reads, round after round, until `stop`."""
    while not stop.is_set():
        for path in paths:
            sent = time.monotonic()
            try:
                status, headers, body = fetch(url + path)
            except OSError as exc:
                journal.saw(sent, "reader", path, None, str(exc))
                continue
            reason = None
            if status != 200:
                try:
                    answer = json.loads(body)
                    reason = answer.get("reason") or json.dumps(answer.get("checks"))
                except ValueError:
                    reason = body[:200].decode("utf-8", "replace")
            journal.saw(sent, "reader", path, status, reason, headers)
        stop.wait(0.2)


# --- the faults ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    name: str
    start: float  # monotonic
    end: float
    wall_end: float  # time.time(), to compare with the database's timestamps

    def during(self, seen: Seen, slack: float = AFTER_FAULT_SLACK) -> bool:
        """The request was under way during the fault (or sent just after its end)."""
        return seen.at >= self.start and seen.sent <= self.end + slack


def ended(name: str, start: float) -> Fault:
    return Fault(name, start, time.monotonic(), time.time())


def redis_down(servers: Servers) -> Fault:
    """Both Redis servers killed outright, then started again on the same port and folder (the
    broker reads its append-only file back; the cache starts empty)."""
    start = time.monotonic()
    servers.broker.kill()
    servers.cache.kill()
    time.sleep(FAULT_SECONDS)
    servers.broker.start()
    servers.cache.start()
    return ended("redis", start)


def postgresql_down(servers: Servers) -> Fault:
    """PostgreSQL crashed (`immediate`: no checkpoint, recovery from the WAL when it starts)."""
    start = time.monotonic()
    servers.cluster.stop("immediate")
    time.sleep(FAULT_SECONDS)
    servers.cluster.start()
    return ended("postgresql", start)


def worker_killed(servers: Servers) -> Fault:
    """The Celery worker SIGKILLed while it holds tasks (acknowledged late, they are in kombu's
    `unacked` hash: `servers.held` says how many); supervisord starts it again, and the tasks
    go back to the queue once the visibility timeout has passed."""
    import redis

    broker = redis.Redis.from_url(servers.broker.url)
    deadline = time.monotonic() + 20
    while not (held := broker.hlen("unacked")) and time.monotonic() < deadline:
        time.sleep(0.05)
    stack = servers.stack
    [killed] = [pid for pid in descendants(stack.process.pid) if is_the_worker(pid)]
    start = time.monotonic()
    os.kill(killed, signal.SIGKILL)
    servers.held = held
    exited = {"message": "worker exited: starting it again", "pid": killed}
    deadline = time.monotonic() + 30
    while not any(exited.items() <= line.items() for line in log_lines(stack)):
        assert time.monotonic() < deadline, "supervisord never started the worker again"
        time.sleep(0.1)
    return ended("worker", start)


def is_the_worker(pid: int) -> bool:
    """The Celery worker's process (supervisord's `worker` program; the beat is another)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"celery" in argv and b"worker" in argv


def log_lines(stack: Stack) -> list[dict]:
    """`make prod`'s JSON lines so far (the last one only once it is whole)."""
    text = stack.log.read_text(errors="replace")
    whole = text[: text.rfind("\n") + 1]
    return [json.loads(line) for line in whole.splitlines() if line.startswith("{")]


def ready_again(url: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while fetch(url + "/readyz")[0] != 200:
        assert time.monotonic() < deadline, "the board never became ready again"
        time.sleep(0.2)


def pending_runs(servers: Servers) -> int:
    return servers.sql(f"SELECT count(*) FROM {RUNS} WHERE verification = 'pending'")[0][0]


def out_of_pending_after(servers: Servers, fault: Fault) -> float:
    """Seconds from the fault's end to the last verdict on a run committed before that end (to
    now when one of them is still pending)."""
    [(last,)] = servers.sql(
        f"SELECT extract(epoch FROM max(coalesce(verified_at, now()))) FROM {RUNS} "
        "WHERE committed_at <= to_timestamp(%s)",
        (fault.wall_end,),
    )
    return float(last) - fault.wall_end


def summary(faults, journal: Journal, held: int, drained: float, late: dict) -> str:
    """What happened, for the log of a run (`pytest -s`)."""
    lines = [
        f"{len(journal.acknowledged)} finals acknowledged "
        f"({sum(a.duplicate for a in journal.acknowledged)} as duplicates), "
        f"{len(journal.seen)} answers seen; the worker held {held} tasks when killed; nothing "
        f"was pending {drained:.1f} s after the last fault's end"
    ]
    for fault in faults:
        statuses = Counter(
            ("reader" if s.who == "reader" else "pods", s.status)
            for s in journal.seen
            if fault.during(s)
        )
        finals = sum(fault.start <= a.at <= fault.end for a in journal.acknowledged)
        lines.append(
            f"{fault.name}: {fault.end - fault.start:.1f} s, {finals} finals acknowledged "
            f"meanwhile, answers {dict(statuses)}; its runs out of pending "
            f"{late[fault.name]:.1f} s after its end"
        )
    return "\n".join(lines)


# --- the test --------------------------------------------------------------------------------------


def test_under_faults_no_acknowledged_final_is_lost_nothing_answers_500_nothing_stays_pending(
    servers,
):
    stack, journal = servers.stack, Journal()
    stop_pods, stop_reader = threading.Event(), threading.Event()
    pods = []
    for number, model in enumerate(MODELS):
        pod = RecordingPod(stack.url, journal, f"pod-{number}")
        assert pod.enroll().status == 200
        pods.append(in_thread(journal, upload_jobs, pod, model, number, stop_pods, journal))
    deadline = time.monotonic() + 60
    while not journal.acknowledged:  # a run and a benchmark for the reader
        assert time.monotonic() < deadline, journal.not_acknowledged or "no final acknowledged"
        time.sleep(0.2)
    first = journal.acknowledged[0]
    paths = [p.format(run_id=first.run_id, benchmark_id=first.benchmark_id) for p in READS]
    reader = in_thread(journal, read_board, stack.url, paths, stop_reader, journal)

    faults = []
    try:
        for inject in (redis_down, postgresql_down, worker_killed):
            time.sleep(RECOVERY_SECONDS)
            ready_again(stack.url)
            faults.append(inject(servers))
        time.sleep(RECOVERY_SECONDS)
    finally:
        stop_pods.set()
        for thread in pods:
            thread.join(timeout=180)
    last = faults[-1]
    while (pending := pending_runs(servers)) and time.monotonic() < last.end + PENDING_BOUND:
        time.sleep(0.5)
    drained = time.monotonic() - last.end
    stop_reader.set()
    reader.join(timeout=60)
    late = {fault.name: out_of_pending_after(servers, fault) for fault in faults}
    print(summary(faults, journal, servers.held, drained, late))
    assert journal.crashed == []

    # Every acknowledged final exactly once, whole: 0 lost, 0 duplicated, 0 partial.
    stored = {
        run_id: (job_sig, rows)
        for run_id, job_sig, rows in servers.sql(
            f"SELECT r.run_id, r.job_sig, count(x.id) FROM {RUNS} r "
            f"LEFT JOIN {RESULTS} x ON x.run_id = r.id GROUP BY r.id"
        )
    }
    assert [a for a in journal.acknowledged if stored.get(a.run_id) != (a.job_sig, a.rows)] == []
    duplicated = servers.sql(
        f"SELECT key_fingerprint, job_sig, count(*) FROM {RUNS} WHERE job_sig IS NOT NULL "
        "GROUP BY key_fingerprint, job_sig HAVING count(*) > 1"
    )
    assert duplicated == []
    run_of_job = {}
    for ack in journal.acknowledged:  # a final sent again is answered with the same run
        assert run_of_job.setdefault(ack.job_sig, ack.run_id) == ack.run_id, ack
    assert journal.not_acknowledged == []  # the pods' retries outlasted every fault

    # No 500 anywhere: not to the pods or the reader, not to anyone (gunicorn's access log).
    assert [s for s in journal.seen if s.status == 500] == []
    access = [e for e in log_lines(stack) if e.get("logger") == "gunicorn.access"]
    assert access and [e for e in access if str(e.get("status")) == "500"] == []
    assert [s for s in journal.seen if s.status is None] == []  # and every request answered
    assert {s.status for s in journal.seen} <= {200, 503}
    # A 503 only while a fault lasted (or just after), with Retry-After; readiness names the
    # part that failed.
    unavailable = [s for s in journal.seen if s.status == 503]
    assert [s for s in unavailable if not any(f.during(s) for f in faults)] == []
    assert [s for s in unavailable if s.path != "/readyz" and s.retry_after != "5"] == []
    assert [s for s in unavailable if s.path == "/readyz" and "error" not in s.reason] == []

    # Every fault met the load. Redis down: finals committed and acknowledged meanwhile (the
    # generation move after each commit failed, logged), reads served from the database,
    # readiness failing on the broker. PostgreSQL down: pods and reader answered 503. The worker
    # held tasks when it was killed.
    redis_fault, postgresql_fault, worker_fault = faults

    def seen_during(fault, who, path=None, status=None) -> list[Seen]:
        return [
            s
            for s in journal.seen
            if fault.during(s, slack=0)
            and (s.who == "reader") == (who == "reader")
            and (path is None or s.path == path)
            and (status is None or s.status == status)
        ]

    assert any(redis_fault.start <= a.at <= redis_fault.end for a in journal.acknowledged)
    assert any("work after a commit failed" in e.get("message", "") for e in log_lines(stack))
    assert seen_during(redis_fault, "reader", "/api/v1/benchmarks", 200)
    assert any("broker" in s.reason for s in seen_during(redis_fault, "reader", "/readyz", 503))
    assert seen_during(postgresql_fault, "pods", status=503)
    # A read the answer cache holds may still be answered 200 while PostgreSQL is down (nothing
    # committed meanwhile, so its generation stands); a read that reaches the database is a 503.
    assert [s for s in seen_during(postgresql_fault, "reader", status=503) if s.path != "/readyz"]
    assert servers.held > 0

    # Every run out of pending soon after the faults, verified, its latest signed manifest
    # saying so.
    assert pending == 0, f"{pending} runs still pending {drained:.0f} s after the last fault"
    assert max(late.values()) <= PENDING_BOUND, late
    verdicts = dict(servers.sql(f"SELECT verification, count(*) FROM {RUNS} GROUP BY 1"))
    assert verdicts.keys() == {"verified"}, verdicts
    latest = servers.sql(
        f"SELECT DISTINCT ON (m.run_id) m.document, r.verification FROM {MANIFESTS} m "
        f"JOIN {RUNS} r ON r.run_id = m.run_id ORDER BY m.run_id, m.version DESC"
    )
    assert len(latest) == len(stored)
    said = Counter((json.loads(doc)["standing"]["verification"], v) for doc, v in latest)
    assert said.keys() == {("verified", "verified")}, said
