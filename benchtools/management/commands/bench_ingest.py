"""Measure ingest against its byte floor as a pod meets the board (issue 21, "Budgets the
redesign keeps"; docs/protocol.md §Ingest cost).

By default the command starts the board as it is deployed (`benchtools.deployed`: `make prod`'s
environment and set-up, gunicorn with config/gunicorn.conf.py, a Celery worker consuming the
Redis broker) against DATABASE_URL, and times finals as pods send them
(`benchtools.pod_final`): in each round a fresh key enrolls, opens a session and sends one
prepared, signed final on its kept-alive connection, the board at rest. It uploads a 174-case
text final (0.14 MiB) and a ~64 MiB text final (arena artifacts) and prints for each the pod's
time (client side) and the board's (gunicorn's access log), the floor measured here on the same
bytes (parse + canonical re-serialisation + sha256 + signature verify), the pod's time over the
floor against its goal, the web workers' CPU time for the upload and their peak memory growth
against the body, and writes the same as JSON under var/bench/.

`--inside` measures the way this bench did before issue 21's budgets, for comparison: gunicorn
started on flags of its own (one worker), a broker with no worker, one key for every round,
each small final after its cumulative checkpoints. What that left out, and what it made of the
figures, is in docs/protocol.md §Ingest cost.

`--back-to-back` sends each final without waiting for the board to come to rest (the previous
final's recompute and weight check overlap it on the worker).

`--url` measures a board already serving instead (checkpoints and finals of demo jobs, medians).
"""

import hashlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError, connection

from benchtools import deployed
from benchtools.pod_final import summary, time_pod_final, wait_at_rest
from benchtools.procfs import children_of, cpu_seconds, free_port, memory_kib, reset_peak
from config import prodstack
from demo.bundles import (
    DEMO_MODELS,
    PERF_SUITE_ID,
    TEXT_SUITE_ID,
    job_bundles,
    text_checkpoints,
)
from demo.podclient import PodClient, RunSession
from evidence.signing import verify_signature

WORKER_CLASS = "gthread"  # --inside: as config/gunicorn.conf.py
SERVER_INSIDE = f"gunicorn 1 worker x 4 threads ({WORKER_CLASS}), no Celery worker"
SERVER_DEPLOYED = "gunicorn -c config/gunicorn.conf.py, a Celery worker (make prod's commands)"
# The weight check's Hub: a port that refuses at once unless AEON_HF_ENDPOINT names one (the
# bench's finals name demo models no Hub holds; each check is deferred and retried later).
NO_HUB = "http://127.0.0.1:9"

ROOT = Path(settings.BASE_DIR)
BODY_BYTES = 64 * 1024 * 1024  # the protocol's cap on a bundle's artifacts, as a body
# Budgets (issue 21, "Budgets the redesign keeps"): the pod's time over the floor's, and the web
# worker's peak memory growth over the body size.
RATIO_GOAL = {"small": 10.0, "large": 2.5}
GROWTH_GOAL = {"small": None, "large": 4.0}  # set for the 64 MiB upload only
HTML_LINE = '<div class="cell" data-i="{i}">Score: "{i}" &amp; more\\tcells</div>\n'


def floor_seconds(body: bytes, public_key: str) -> float:
    """What any verifier of this body must do: parse, re-serialise canonically, hash, verify."""
    started = time.perf_counter()
    envelope = json.loads(body)
    message = json.dumps(envelope["bundle"], sort_keys=True, separators=(",", ":")).encode()
    hashlib.sha256(body).hexdigest()
    if not verify_signature(public_key, envelope["signature"], message):
        raise CommandError("the floor's signature does not verify")
    return time.perf_counter() - started


def big_text_bundle(text: dict) -> dict:
    """The demo text final with arena artifacts making a body of about 64 MiB."""
    lines = "".join(HTML_LINE.format(i=i) for i in range(2000))
    escaped = len(json.dumps(lines)) / len(lines)  # quotes and tabs travel as two characters
    items, per_item = 4, int((BODY_BYTES - 256 * 1024) / escaped) // 4
    html = (lines * (per_item // len(lines) + 1))[:per_item]
    template = text["artifacts"][0]
    artifacts = [
        template | {"prompt_id": f"app.bench{i}", "html": html, "bytes": len(html)}
        for i in range(items)
    ]
    return text | {"artifacts": artifacts}


def _mark(value: float, goal: float | None) -> str:
    """The goal, and whether it is met."""
    if goal is None:
        return "-".rjust(6)
    return f"{'<=' if value <= goal else '> '}{goal:g}x".rjust(6)


class Command(BaseCommand):
    help = "Ingest time against its byte floor on gunicorn (or, with --url, a running board)."

    def add_arguments(self, parser):
        parser.add_argument("--url", help="measure a board already serving here instead")
        parser.add_argument("--jobs", type=int, default=5, help="--url mode: demo jobs to send")
        parser.add_argument("--small", type=int, default=25, help="0.2 MiB finals to time")
        parser.add_argument("--large", type=int, default=3, help="64 MiB finals to time")
        parser.add_argument("--output", help="JSON report (default var/bench/ingest-<time>.json)")
        parser.add_argument(
            "--broker",
            default=os.environ.get("CELERY_BROKER_URL") or "redis://127.0.0.1:6379/0",
            help="Redis broker of the board under test ('' for eager Celery with --inside)",
        )
        parser.add_argument(
            "--cache",
            default=os.environ.get("CACHE_URL"),
            help="the deployed board's Redis answer cache (default: the broker's next database)",
        )
        parser.add_argument(
            "--back-to-back",
            action="store_true",
            help="send each final without waiting for the board to come to rest (the previous "
            "final's recompute and weight check may still run on the worker)",
        )
        parser.add_argument(
            "--inside",
            action="store_true",
            help="the bench before issue 21: gunicorn on its own flags, no Celery worker, one "
            "key, checkpoints before each small final",
        )

    def handle(self, *args, url, jobs, small, large, broker, cache, inside, output, **options):
        deployed.stop_on_sigterm()
        self.run_ids: set[str] = set()
        self.at_rest = not options["back_to_back"]
        if url:
            return self._against(url, jobs)
        if connection.vendor != "postgresql":
            self.stderr.write(f"note: measuring on {connection.vendor}, not PostgreSQL")
        self._check_database()
        broker = broker if broker and self._broker_answers(broker) else ""
        if not inside and not broker:
            raise CommandError("a pod meets a board with a Redis broker: --broker must answer")
        sizes = [("0.2 MiB text final (174 cases)", small, "small")]
        sizes.append(("64 MiB text final (artifacts)", large, "large"))
        sizes = [size for size in sizes if size[1] > 0]  # `--large 0`: the small final alone
        data_dir = Path(tempfile.mkdtemp(prefix="aeon-bench-"))
        try:
            if inside:
                rows = self._inside(sizes, broker, data_dir)
            else:
                rows = self._as_a_pod(sizes, broker, cache, data_dir)
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)
            if broker:
                self._forget_queued_checks(broker)
        server = SERVER_INSIDE if inside else SERVER_DEPLOYED
        if not inside and not self.at_rest:
            server += ", finals back to back"
        self._table(rows, broker, server)
        self._write(rows, broker, server, output)

    def _as_a_pod(self, sizes: list, broker: str, cache: str | None, data_dir: Path) -> list:
        import redis

        env = deployed.environment(
            database_url=self._database_url(),
            broker=broker,
            cache=cache or prodstack.cache_beside(broker),
            data_dir=data_dir,
        )
        env["AEON_HF_ENDPOINT"] = os.environ.get("AEON_HF_ENDPOINT", NO_HUB)
        board = deployed.start(env)
        deployed.gather_statistics(env["DATABASE_URL"])
        queues = redis.Redis.from_url(broker)
        try:
            return [
                self._measure_as_a_pod(board, queues, label, times, name)
                for label, times, name in sizes
            ]
        finally:
            board.stop()

    def _measure_as_a_pod(self, board, queues, label: str, times: int, size_name: str) -> dict:
        rounds, floors = [], []
        for index in range(times + 1):  # the first round warms the workers up, uncounted
            text = self._text_bundle(index, size_name == "large")
            if self.at_rest:
                wait_at_rest(board, queues)
            timed = time_pod_final(board, text, DEMO_MODELS[0].hf_repo, TEXT_SUITE_ID)
            self.run_ids.add(timed["run_id"])
            body, public_key = timed.pop("body"), timed["public_key"]
            if index:
                rounds.append(timed)
                floors.append(floor_seconds(body, public_key))
            del body, text
        return {
            "label": label,
            "size_name": size_name,
            **summary(rounds, floors),
            "ratio_goal": RATIO_GOAL[size_name],
            "growth_goal": GROWTH_GOAL[size_name],
            "n": times,
        }

    def _inside(self, sizes: list, broker: str, data_dir: Path) -> list:
        call_command("migrate", verbosity=0)
        if connection.vendor == "postgresql":
            deployed.gather_statistics(self._database_url())
        port = free_port()
        server = self._start_gunicorn(port, broker, data_dir)
        base = f"http://127.0.0.1:{port}"
        try:
            self._wait_ready(base, server)
            [worker] = children_of(server.pid)
            return [self._measure(base, worker, label, times, name) for label, times, name in sizes]
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)

    # --- the board under test -------------------------------------------------------------

    @staticmethod
    def _check_database() -> None:
        """A database that is missing or unreachable is said in one line, not a traceback. The
        bench never creates one: a mistyped DATABASE_URL would leave a stray database behind."""
        try:
            connection.ensure_connection()
            return
        except OperationalError as exc:
            problem = " ".join(str(exc).split()) or repr(exc)
        db = connection.settings_dict
        name, host, port = db["NAME"], db["HOST"] or "localhost", db["PORT"] or 5432
        user = db["USER"] or "postgres"
        if connection.vendor == "postgresql" and "does not exist" in problem and name in problem:
            raise CommandError(
                f"database {name!r} does not exist on {host}:{port}: create it with "
                f"`createdb -h {host} -p {port} -U {user} {name}`, or set DATABASE_URL to an "
                "existing PostgreSQL database"
            )
        raise CommandError(f"cannot connect to database {name!r} on {host}:{port}: {problem}")

    @staticmethod
    def _broker_answers(broker: str) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(broker, socket_connect_timeout=2).ping())
        except redis.RedisError:
            return False

    def _start_gunicorn(self, port: int, broker: str, data_dir: Path) -> subprocess.Popen:
        env = os.environ | {
            "DEBUG": "0",
            "AEON_DATA_DIR": str(data_dir),
            "CELERY_BROKER_URL": broker,
            # Eager Celery would run the weight check in the request: keep it off the network.
            "AEON_HF_ENDPOINT": os.environ.get("AEON_HF_ENDPOINT", "")
            if broker
            else "http://127.0.0.1:9",
            # As deploy/compose.yaml serves: each thread keeps its database connection (a new
            # PostgreSQL connection costs 4-12 ms here, about the whole floor of a 0.2 MiB final).
            "DB_CONN_MAX_AGE": os.environ.get("DB_CONN_MAX_AGE", "60"),
            "AEON_RATE_LIMIT_PER_IP": "1000000",
            "AEON_RATE_LIMIT_PER_KEY": "1000000",
        }
        env = {name: value for name, value in env.items() if value != ""}
        command = [sys.executable, "-m", "gunicorn", "config.wsgi", "--workers", "1"]
        command += ["--threads", "4", "--worker-class", WORKER_CLASS]
        command += ["--timeout", "150", "--bind", f"127.0.0.1:{port}"]
        return subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)

    @staticmethod
    def _wait_ready(base: str, server: subprocess.Popen) -> None:
        for _ in range(240):
            if server.poll() is not None:
                raise CommandError("gunicorn exited; run it by hand to see why")
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(0.25)
        raise CommandError("gunicorn did not answer within a minute")

    @staticmethod
    def _database_url() -> str:
        url = os.environ.get("DATABASE_URL", "")
        if not url.startswith(("postgres://", "postgresql://")):
            raise CommandError("the deployed board runs on PostgreSQL: set DATABASE_URL")
        return url

    def _forget_queued_checks(self, broker: str) -> None:
        """Remove the work this run's finals left queued (no worker ran to take it, or a weight
        check waits for its retry): the broker is the board's, not the bench's."""
        import redis

        client = redis.Redis.from_url(broker)
        for queue in ("celery", "weights"):
            for message in client.lrange(queue, 0, -1):
                if any(run_id.encode() in message for run_id in self.run_ids):
                    client.lrem(queue, 1, message)

    # --- measuring ------------------------------------------------------------------------

    def _measure(self, base: str, worker: int, label: str, times: int, size_name: str) -> dict:
        large = size_name == "large"
        pod = PodClient(base, timeout=600)
        pod.enroll()
        board_s, floor_s, growth, cpu_s = [], [], [], []
        size = 0
        for index in range(times + 1):  # the first round warms the worker up, uncounted
            text = self._text_bundle(index, large)
            session = self._open(pod)
            if not large:
                for checkpoint in text_checkpoints(text):
                    self._expect(pod.submit(session, checkpoint, final=False))
            body = json.dumps(pod.signed_results(session, text, final=True)).encode()
            size = len(body)
            before = memory_kib(worker)["VmRSS"]
            reset_peak(worker)
            cpu_before = cpu_seconds(worker)
            started = time.perf_counter()
            self._expect(self._post(pod, session, body))
            elapsed = time.perf_counter() - started
            cpu = cpu_seconds(worker) - cpu_before
            peak = memory_kib(worker)["VmHWM"]
            self.run_ids.add(session.run_id)
            if index:
                board_s.append(elapsed)
                floor_s.append(floor_seconds(body, pod.public_key))
                growth.append((peak - before) * 1024)
                cpu_s.append(cpu)
            del body
        board, floor = statistics.median(board_s), statistics.median(floor_s)
        return {
            "label": label,
            "size_name": size_name,
            "size": size,
            "pod": board,  # timed on the client's side, as the pod's time is
            "board": None,
            "floor": floor,
            "ratio": board / floor,
            "ratio_goal": RATIO_GOAL[size_name],
            "worker_cpu": statistics.mean(cpu_s),
            "growth": max(growth),
            "growth_ratio": max(growth) / size,
            "growth_goal": GROWTH_GOAL[size_name],
            "cpu_ratio": statistics.mean(cpu_s) / floor,
            "rss": memory_kib(worker)["VmRSS"] * 1024,
            "n": times,
            "pod_all": board_s,
            "floor_all": floor_s,
        }

    @staticmethod
    def _text_bundle(index: int, large: bool) -> dict:
        job = job_bundles(
            DEMO_MODELS[0], started=f"bench-{time.time_ns()}-{index}", with_agentic=False
        )
        for _board, suite, _name, bundle in job:
            if suite == TEXT_SUITE_ID:
                return big_text_bundle(bundle) if large else bundle
        raise CommandError("the demo job has no text bundle")

    def _open(self, pod: PodClient) -> RunSession:
        return pod.open_run(DEMO_MODELS[0].hf_repo, TEXT_SUITE_ID, "text")

    @staticmethod
    def _post(pod: PodClient, session: RunSession, body: bytes):
        path = f"/api/v1/runs/{session.run_id}/results"
        return pod.send("POST", path, body, {"X-Aeon-Run-Token": session.run_token})

    @staticmethod
    def _expect(answer) -> None:
        if answer.status != 200:
            raise CommandError(f"refused: {answer.status} {answer.body}")

    def _table(self, rows: list[dict], broker: str, server: str) -> None:
        mib = 1024 * 1024
        self.stdout.write(
            f"PostgreSQL: {connection.vendor == 'postgresql'}; {server}; "
            f"Celery: {'Redis broker ' + broker if broker else 'eager (no Redis)'}"
        )
        self.stdout.write(
            f"{'upload':<32} {'body':>8} {'pod':>9} {'board':>9} {'floor':>9} {'ratio':>6} "
            f"{'goal':>6} {'cpu':>8} {'cpu/floor':>9} {'RSS growth':>18} {'goal':>6}"
        )
        for row in rows:
            board = "-" if row["board"] is None else f"{row['board'] * 1000:.1f}ms"
            self.stdout.write(
                f"{row['label']:<32} {row['size'] / mib:6.2f}Mi {row['pod'] * 1000:7.1f}ms "
                f"{board:>9} {row['floor'] * 1000:7.1f}ms {row['ratio']:5.1f}x "
                f"{_mark(row['ratio'], row['ratio_goal'])} {row['worker_cpu'] * 1000:6.0f}ms "
                f"{row['cpu_ratio']:8.1f}x "
                f"{row['growth'] / mib:6.0f}Mi ({row['growth_ratio']:.1f}x body) "
                f"{_mark(row['growth_ratio'], row['growth_goal'])}"
            )
        self.stdout.write(
            "pod: the final's time on the pod's side (request sent to answer read); board: "
            "gunicorn's own time of it (access log, ms); floor: measured in this process on the "
            "same bytes; ratio: pod over floor; all medians of the timed rounds; cpu: the web "
            "workers' CPU time per upload (mean; over the floor, a ratio that holds on a busy "
            "machine); RSS growth: the largest peak growth of a web worker over its resident "
            "size before the upload"
        )

    def _write(self, rows: list[dict], broker: str, server: str, output: str | None) -> None:
        report = {
            "measured_at": int(time.time()),
            "database": connection.vendor,
            "server": server,
            "broker": broker or None,
            "load_average": os.getloadavg(),
            "uploads": rows,
        }
        path = Path(output or ROOT / "var" / "bench" / f"ingest-{report['measured_at']}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2) + "\n")
        self.stdout.write(f"written to {path}")

    # --- --url: a board already serving ---------------------------------------------------

    def _against(self, url: str, jobs: int) -> None:
        pod = PodClient(url, wait_when_rate_limited=True)
        timings: dict[str, list[float]] = {"checkpoint": [], "text final": [], "perf final": []}
        for index in range(jobs):
            bundles = {
                suite: (board, name, bundle)
                for board, suite, name, bundle in job_bundles(
                    DEMO_MODELS[0], started=f"bench-{time.time_ns()}-{index}", with_agentic=False
                )
            }
            board, name, text = bundles[TEXT_SUITE_ID]
            session = pod.open_run(name, TEXT_SUITE_ID, board)
            for checkpoint in text_checkpoints(text):
                timings["checkpoint"].append(
                    self._timed(pod.submit, session, checkpoint, final=False)
                )
            timings["text final"].append(self._timed(pod.submit, session, text, final=True))
            board, name, perf = bundles[PERF_SUITE_ID]
            session = pod.open_run(name, PERF_SUITE_ID, board)
            timings["perf final"].append(self._timed(pod.submit, session, perf, final=True))
        for label, values in timings.items():
            self.stdout.write(
                f"{label:>12}: median {statistics.median(values) * 1000:7.1f} ms  "
                f"max {max(values) * 1000:7.1f} ms  (n={len(values)})"
            )

    def _timed(self, call, *args, **kwargs) -> float:
        started = time.perf_counter()
        answer = call(*args, **kwargs)
        elapsed = time.perf_counter() - started
        self._expect(answer)
        return elapsed
