"""Benchmarks of the board. `bench reads`: the read APIs and the public pages under load.

`bench reads` loads 1,000 and then 10,000 realistic comprehensive benchmarks through the service
layer (`submissions/read_bench.py`) into a database of its own, serves the app with gunicorn in
the production configuration (PostgreSQL, a Redis cache, DEBUG off), and measures each read with
`wrk` next to the floor: the same bytes answered from memory by the same stack. Each read is
measured twice: as served (from the generation cache once warm) and uncached (a server whose
answer cache keeps nothing, so every request is a miss that reads the database and renders). It
prints a table and writes JSON under var/bench/. `bench load-reads` is the loading step it runs
in a child.
"""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote_plus, urlsplit, urlunsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

ROOT = Path(__file__).resolve().parents[3]

# (name, path, kind): kind "champion" and "list" carry the goals of docs/champions.md.
TARGETS = (
    ("pod_champions", "/api/recipes/champions?hardware=" + quote_plus("single DGX Spark (GB10)")),
    ("champions", "/api/v1/champions"),
    ("recipe", "/api/v1/recipes/{recipe_id}"),
    ("benchmarks", "/api/v1/benchmarks"),
    ("benchmarks_by_class", "/api/v1/benchmarks?hardware=dgx-spark-x1"),
    ("benchmark_detail", "/api/v1/benchmarks/{benchmark_id}"),
    ("board_page", "/"),
    ("board_page_by_class", "/?hardware=dgx-spark-x1"),
    ("hardware_page", "/hardware/dgx-spark-x1/"),
    ("model_page", "/models/{model}/"),
    ("benchmark_page", "/benchmarks/{benchmark_id}/"),
    ("recipe_page", "/recipes/{recipe_id}/"),
)
CHAMPION_APIS = ("pod_champions", "champions", "recipe")
LIST_APIS = ("benchmarks", "benchmarks_by_class", "benchmark_detail")
PAGES = (
    "board_page",
    "board_page_by_class",
    "hardware_page",
    "model_page",
    "benchmark_page",
    "recipe_page",
)

BUMP = "from board.services import bump_generation; bump_generation()"

# wrk reports what its summary holds as one JSON line: latencies in microseconds.
WRK_REPORT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"bytes":%d,"errors":%d,"non_2xx_3xx":%d,' ..
    '"p50_us":%d,"p95_us":%d,"p99_us":%d,"max_us":%d}\\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max))
end
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Command(BaseCommand):
    help = "bench reads: the read APIs and the public pages under wrk, next to the floor."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="what", required=True)
        reads = commands.add_parser("reads", help="measure the reads at each board size")
        reads.add_argument("--sizes", default="1000,10000", help="benchmarks per step")
        reads.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
        reads.add_argument(
            "--warmup", type=int, default=1, help="seconds of unmeasured load before each read"
        )
        reads.add_argument("--connections", type=int, default=16)
        reads.add_argument("--wrk-threads", type=int, default=2)
        reads.add_argument("--workers", type=int, default=4, help="gunicorn processes")
        reads.add_argument("--threads", type=int, default=4, help="threads per process")
        reads.add_argument("--load-jobs", type=int, default=2, help="loading processes")
        reads.add_argument(
            "--database-url",
            help="PostgreSQL database to (re)create; default: DATABASE_URL's, suffixed _readbench",
        )
        reads.add_argument(
            "--cache-url",
            default=os.environ.get("AEON_BENCH_CACHE_URL") or settings.CACHE_URL,
            help="Redis for the answer cache (default AEON_BENCH_CACHE_URL, else CACHE_URL)",
        )
        reads.add_argument("--output", help="JSON report (default var/bench/reads-<time>.json)")
        reads.add_argument(
            "--keep-databases",
            action="store_true",
            help="one database per size (the name + the size), kept for the next run: a missing "
            "one starts as a copy of the next smaller one and loads only the difference",
        )
        load = commands.add_parser("load-reads", help="record benchmarks into DATABASE_URL")
        load.add_argument("--first", type=int, default=0)
        load.add_argument("--count", type=int, required=True)
        load.add_argument("--no-recompute", action="store_true")

    def handle(self, *args, what: str, **options):
        if what == "load-reads":
            return self._load(options)
        return self._reads(options)

    # --- the loading child -------------------------------------------------------------------

    def _load(self, options) -> None:
        """Record benchmarks; with --no-recompute leave the read models to a later call (the
        benchmark loads in several processes, then recomputes once)."""
        import logging

        from board.services import read_models_deferred
        from submissions import read_bench
        from submissions.demo.loader import prefill_hub_cache

        logging.disable(logging.INFO)  # one line per eager task is noise here
        if not options["no_recompute"]:
            read_bench.load_benchmarks(options["count"], first=options["first"])
            return
        prefill_hub_cache()
        with read_models_deferred():
            for index in range(options["first"], options["first"] + options["count"]):
                read_bench.record_benchmark(index)

    # --- the benchmark -----------------------------------------------------------------------

    def _reads(self, options) -> None:
        if not shutil.which("wrk"):
            raise CommandError("needs wrk (apt-get install wrk)")
        if not options["cache_url"].startswith("redis"):
            raise CommandError("needs a Redis cache: --cache-url redis://127.0.0.1:6379/<db>")
        database_url = options["database_url"] or self._default_database_url()
        sizes = sorted(int(size) for size in options["sizes"].split(","))
        workdir = Path(tempfile.mkdtemp(prefix="aeon-readbench-"))
        env = os.environ | {
            "DATABASE_URL": database_url,
            "CACHE_URL": options["cache_url"],
            "AEON_ENV": "production",
            "SECRET_KEY": secrets.token_urlsafe(40),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DEBUG": "0",
            "DB_CONN_MAX_AGE": "600",
            "LOG_LEVEL": "WARNING",
            "AEON_DATA_DIR": str(workdir),
            "AEON_BENCH_FLOOR_DIR": str(workdir / "floor"),
        }
        env.pop("CELERY_BROKER_URL", None)  # recompute inline while loading
        (workdir / "floor").mkdir()
        (workdir / "report.lua").write_text(WRK_REPORT)
        if not options["keep_databases"]:
            self._recreate_database(database_url)
            self._manage(env, "migrate", "--noinput", "-v0")
        self._manage(env, "collectstatic", "--noinput", "-v0")  # production storage is hashed

        report = {
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "load_average": list(os.getloadavg())},
            "settings": {
                key: options[key]
                for key in ("duration", "connections", "wrk_threads", "workers", "threads")
            },
            "sizes": {},
        }
        loaded, previous = 0, None
        for size in sizes:
            if options["keep_databases"]:
                env["DATABASE_URL"] = self._kept_database(database_url, size, previous)
                self._manage(env, "migrate", "--noinput", "-v0")
                loaded, previous = self._benchmark_count(env["DATABASE_URL"]), env["DATABASE_URL"]
            if loaded < size:
                self.stdout.write(f"loading benchmarks {loaded} … {size - 1} through the services")
                started = time.monotonic()
                self._load_range(env, loaded, size - loaded, options["load_jobs"])
                report.setdefault("load_seconds", {})[str(size)] = round(time.monotonic() - started)
                loaded = size
            # A new generation: nothing cached by an earlier run on a kept database is served.
            self._manage(env, "shell", "-c", BUMP)
            report.setdefault("load_average", {})[str(size)] = list(os.getloadavg())
            report["sizes"][str(size)] = self._measure(env, workdir, options)
        report["goals"] = goals(report["sizes"])
        self._print(report)
        output = Path(
            options["output"] or ROOT / "var" / "bench" / f"reads-{int(time.time())}.json"
        )
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(report, indent=2) + "\n")
        self.stdout.write(f"written to {output}")
        shutil.rmtree(workdir, ignore_errors=True)

    def _default_database_url(self) -> str:
        db = settings.DATABASES["default"]
        if db["ENGINE"] != "django.db.backends.postgresql":
            raise CommandError("needs PostgreSQL: set DATABASE_URL or --database-url")
        user, host, port = db["USER"] or "postgres", db["HOST"] or "127.0.0.1", db["PORT"] or 5432
        return f"postgres://{user}@{host}:{port}/{db['NAME']}_readbench"

    def _recreate_database(self, url: str) -> None:
        import psycopg

        parts = urlsplit(url)
        name = parts.path.lstrip("/")
        if not re.fullmatch(r"[A-Za-z0-9_]+", name) or not name.endswith("bench"):
            raise CommandError(f"refusing to recreate {name!r}: its name must end in 'bench'")
        admin = urlunsplit(parts._replace(path="/postgres"))
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            connection.execute(f'CREATE DATABASE "{name}"')

    def _kept_database(self, url: str, size: int, previous: str | None) -> str:
        """The database of one size (`<name><size>`), created as a copy of the next smaller
        size's when it is missing (PostgreSQL copies it in seconds; loading takes minutes)."""
        import psycopg

        parts = urlsplit(url)
        name = f"{parts.path.lstrip('/')}{size}"
        sized = urlunsplit(parts._replace(path=f"/{name}"))
        admin = urlunsplit(parts._replace(path="/postgres"))
        with psycopg.connect(admin, autocommit=True) as connection:
            found = connection.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (name,)
            ).fetchone()
            if found is None:
                template = f' TEMPLATE "{urlsplit(previous).path.lstrip("/")}"' if previous else ""
                connection.execute(f'CREATE DATABASE "{name}"{template}')
        return sized

    @staticmethod
    def _benchmark_count(url: str) -> int:
        import psycopg

        with psycopg.connect(url) as connection:
            found = connection.execute(
                "SELECT to_regclass('board_benchmark') IS NOT NULL"
            ).fetchone()[0]
            if not found:
                return 0
            return connection.execute("SELECT count(*) FROM board_benchmark").fetchone()[0]

    def _manage(self, env: dict, *arguments: str) -> None:
        subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, env=env, check=True)

    def _load_range(self, env: dict, first: int, count: int, jobs: int) -> None:
        """Record `count` benchmarks from `first` in `jobs` processes, then one recompute."""
        jobs = max(1, min(jobs, count))
        self._manage(env, "bench", "load-reads", "--count", "0", "--no-recompute")  # Hub cache
        share, extra = divmod(count, jobs)
        children, start = [], first
        for job in range(jobs):
            part = share + (1 if job < extra else 0)
            command = ["manage.py", "bench", "load-reads", "--first", str(start)]
            children.append(
                subprocess.Popen(
                    [sys.executable, *command, "--count", str(part), "--no-recompute"],
                    cwd=ROOT,
                    env=env,
                )
            )
            start += part
        if any(child.wait() != 0 for child in children):
            raise CommandError("loading failed")
        self._manage(env, "bench", "load-reads", "--count", "0")  # the read models, once

    def _measure(self, env: dict, workdir: Path, options) -> dict:
        """Each read as served and its floor; then each read again on a server whose answer
        cache keeps nothing (every request a miss)."""
        results = {}
        with self._server(env, options) as base:
            for name, path in self._paths(base):
                try:
                    body, content_type = fetch(base + path)  # warm: fills the answer cache
                except urllib.error.HTTPError as error:
                    self.stderr.write(f"  {path} answers {error.code}: not measured")
                    continue
                (workdir / "floor" / f"{name}.body").write_bytes(body)
                (workdir / "floor" / f"{name}.type").write_text(content_type)
                fetch(f"{base}/_bench/floor/{name}")
                self.stdout.write(f"  wrk {path} ({len(body)} bytes) and its floor")
                self._warm(base + path, options)
                results[name] = {
                    "path": path,
                    "bytes": len(body),
                    "answer": self._wrk(base + path, workdir, options),
                    "floor": self._wrk(f"{base}/_bench/floor/{name}", workdir, options),
                }
        with self._server(env | {"AEON_ANSWER_CACHE_SECONDS": "0"}, options) as base:
            for result in results.values():
                self.stdout.write(f"  wrk {result['path']} uncached")
                self._warm(base + result["path"], options)
                result["uncached"] = self._wrk(base + result["path"], workdir, options)
        return results

    @contextmanager
    def _server(self, env: dict, options):
        port = free_port()
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(options["workers"]),
                "--threads",
                str(options["threads"]),
                "--worker-class",
                "gthread",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            self._wait_ready(base)
            yield base
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)

    def _paths(self, base: str) -> list[tuple[str, str]]:
        champions = json.loads(fetch(base + "/api/v1/champions")[0])["champions"]
        crowned = next((c for c in champions if c["axis"] == "throughput"), None)
        found = []
        for name, path in TARGETS:
            if "{model}" in path:
                if crowned is None:
                    continue
                path = path.format(model=crowned["model"])
            if "{benchmark_id}" in path:
                if crowned is None:
                    continue
                path = path.format(benchmark_id=crowned["benchmark_id"])
            if "{recipe_id}" in path:
                if crowned is None or not crowned.get("recipe_id"):
                    continue
                path = path.format(recipe_id=crowned["recipe_id"])
                try:
                    fetch(base + path)
                except urllib.error.HTTPError:
                    self.stdout.write(f"  skipping {path}: not served (yet)")
                    continue
            found.append((name, path))
        return found

    @staticmethod
    def _wait_ready(base: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                fetch(base + "/healthz")
                return
            except OSError:
                time.sleep(0.3)
        raise CommandError("gunicorn did not answer /healthz within 60 s")

    @staticmethod
    def _warm(url: str, options) -> None:
        """Unmeasured load first: every worker process has compiled its templates, opened its
        connections and (when caching) read the answer before the measured run starts."""
        fetch(url)
        if options["warmup"] > 0:
            subprocess.run(
                ["wrk", "-t1", f"-c{options['connections']}", f"-d{options['warmup']}s", url],
                capture_output=True,
                check=True,
            )

    @staticmethod
    def _wrk(url: str, workdir: Path, options) -> dict:
        completed = subprocess.run(
            [
                "wrk",
                f"-t{options['wrk_threads']}",
                f"-c{options['connections']}",
                f"-d{options['duration']}s",
                "--timeout",
                "10s",
                "-s",
                str(workdir / "report.lua"),
                url,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        raw = json.loads(completed.stdout.strip().splitlines()[-1])
        seconds = raw["duration_us"] / 1e6
        return {
            "requests_per_second": round(raw["requests"] / seconds, 1),
            "p50_ms": raw["p50_us"] / 1000,
            "p95_ms": raw["p95_us"] / 1000,
            "p99_ms": raw["p99_us"] / 1000,
            "max_ms": raw["max_us"] / 1000,
            "requests": raw["requests"],
            "errors": raw["errors"],
            "non_2xx_3xx": raw["non_2xx_3xx"],
        }

    def _print(self, report: dict) -> None:
        line = (
            f"{'size':>6} {'read':<20} {'bytes':>7} {'req/s':>8} {'floor':>8} {'%floor':>7} "
            f"{'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'errors':>6} "
            f"{'miss r/s':>8} {'miss p50':>8} {'miss p95':>8}"
        )
        self.stdout.write(line)
        for size, results in report["sizes"].items():
            for name, result in results.items():
                answer, floor = result["answer"], result["floor"]
                miss = result.get("uncached") or {}
                self.stdout.write(
                    f"{size:>6} {name:<20} {result['bytes']:>7} "
                    f"{answer['requests_per_second']:>8.0f} {floor['requests_per_second']:>8.0f} "
                    f"{share_of_floor(result):>6.0%} {answer['p50_ms']:>7.1f} "
                    f"{answer['p95_ms']:>7.1f} {answer['p99_ms']:>7.1f} "
                    f"{answer['errors'] + answer['non_2xx_3xx']:>6} "
                    f"{miss.get('requests_per_second', 0):>8.0f} {miss.get('p50_ms', 0):>8.1f} "
                    f"{miss.get('p95_ms', 0):>8.1f}"
                )
        for goal in report["goals"]:
            mark = "met " if goal["met"] else "MISS"
            self.stdout.write(f"[{mark}] {goal['goal']}: {goal['measured']}")
        self.stdout.write(
            "miss: the same read on a server whose answer cache keeps nothing (every request "
            "reads the database and renders). Numbers from a shared or busy machine are "
            "indicative only; measure on a quiet one."
        )


def fetch(url: str) -> tuple[bytes, str]:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return answer.read(), answer.headers.get("Content-Type", "application/octet-stream")


def share_of_floor(result: dict) -> float:
    floor = result["floor"]["requests_per_second"]
    return result["answer"]["requests_per_second"] / floor if floor else 0.0


def goals(sizes: dict) -> list[dict]:
    """The goals of docs/champions.md, checked against what was measured."""
    found = []
    largest = max(sizes, key=int)
    smallest = min(sizes, key=int)
    for name, result in sizes[largest].items():
        answer = result["answer"]
        if name in CHAMPION_APIS:
            found.append(
                {
                    "goal": f"{name} at {largest}: ≥ 50 % of the floor, ≥ 1,000 req/s, p95 < 20 ms",
                    "measured": f"{share_of_floor(result):.0%}, "
                    f"{answer['requests_per_second']:.0f} req/s, p95 {answer['p95_ms']:.1f} ms",
                    "met": share_of_floor(result) >= 0.5
                    and answer["requests_per_second"] >= 1000
                    and answer["p95_ms"] < 20,
                }
            )
        elif name in LIST_APIS:
            found.append(
                {
                    "goal": f"{name} at {largest}: ≥ 25 % of the floor",
                    "measured": f"{share_of_floor(result):.0%}",
                    "met": share_of_floor(result) >= 0.25,
                }
            )
        elif name in PAGES:
            found.append(
                {
                    "goal": f"{name} at {largest}: ≥ 25 % of the floor, p95 < 50 ms",
                    "measured": f"{share_of_floor(result):.0%}, p95 {answer['p95_ms']:.1f} ms",
                    "met": share_of_floor(result) >= 0.25 and answer["p95_ms"] < 50,
                }
            )
        if (
            name in CHAMPION_APIS + LIST_APIS + PAGES
            and smallest != largest
            and name in sizes[smallest]
        ):
            before = sizes[smallest][name]["answer"]["requests_per_second"]
            change = answer["requests_per_second"] / before - 1 if before else 0.0
            found.append(
                {
                    "goal": f"{name}: within 10 % between {smallest} and {largest}",
                    "measured": f"{change:+.0%}",
                    "met": abs(change) <= 0.10,
                }
            )
            missed = [sizes[size][name].get("uncached") for size in (smallest, largest)]
            if all(missed) and missed[0]["requests_per_second"]:
                change = missed[1]["requests_per_second"] / missed[0]["requests_per_second"] - 1
                found.append(
                    {
                        "goal": f"{name} uncached: within 10 % between {smallest} and {largest}",
                        "measured": f"{change:+.0%} ({missed[1]['requests_per_second']:.0f} "
                        f"req/s, p95 {missed[1]['p95_ms']:.1f} ms)",
                        "met": abs(change) <= 0.10,
                    }
                )
    return found
