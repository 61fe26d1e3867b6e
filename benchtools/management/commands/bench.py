"""Benchmarks of the board. `bench reads`: the read APIs and the public pages under load.

`bench reads` loads 1,000 and then 10,000 realistic comprehensive benchmarks through the service
layer (`benchtools/reads.py`), one PostgreSQL database per size (the larger a copy of the
smaller plus the difference), with a board signing key as deployed; it serves every size at once
with gunicorn in the production configuration (PostgreSQL, a Redis cache, DEBUG off; settings
module benchtools.settings, which adds only this app and the floor's route), and measures each
read with `wrk` next to the floor: the same bytes answered from memory by the same stack. For each read it alternates rounds — each size's answer and the floor, the order turned
every round — and keeps the median of each figure, so sizes and floor are compared as measured
in the same minutes, whatever the machine did meanwhile. Each read is measured twice: as served
(from the generation cache once warm) and uncached (servers whose answer cache keeps nothing, so
every request is a miss that reads the database and renders). Beside requests per second, each
run records the CPU time the server spent per request, which other work on the machine
disturbs less. It prints a table and writes JSON under var/bench/. `bench load-reads` is the
loading step it runs in a child.
"""

import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote_plus, urlsplit, urlunsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchtools.procfs import free_port, tree_cpu_seconds

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


class Server(NamedTuple):
    """A gunicorn serving one database: its address, its master's pid, a URL measured on it."""

    base: str
    pid: int
    url: str


def median_run(runs: list[dict]) -> dict:
    """The median of each figure over a read's rounds; requests and errors summed."""
    median = {
        key: round(statistics.median(run[key] for run in runs), 3)
        for key in (
            "requests_per_second",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "max_ms",
            "cpu_ms_per_request",
        )
    }
    return median | {
        key: sum(run[key] for run in runs) for key in ("requests", "errors", "non_2xx_3xx")
    }


class Command(BaseCommand):
    help = "bench reads: the read APIs and the public pages under wrk, next to the floor."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="what", required=True)
        reads = commands.add_parser("reads", help="measure the reads at each board size")
        reads.add_argument("--sizes", default="1000,10000", help="benchmarks per step")
        reads.add_argument("--duration", type=int, default=3, help="seconds per wrk run")
        reads.add_argument(
            "--rounds",
            type=int,
            default=5,
            help="rounds per read (each size and the floor once a round); the medians are kept",
        )
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
            help="keep the databases of each size (the name + the size) for the next run, which "
            "reuses them: a missing one starts as a copy of the next smaller one and loads only "
            "the difference (without it they are made afresh and dropped at the end)",
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

        from benchtools import reads
        from board.services import read_models_deferred
        from demo.loader import prefill_hub_cache

        logging.disable(logging.INFO)  # one line per eager task is noise here
        if not options["no_recompute"]:
            reads.load_benchmarks(options["count"], first=options["first"])
            return
        prefill_hub_cache()
        with read_models_deferred():
            for index in range(options["first"], options["first"] + options["count"]):
                reads.record_benchmark(index)

    # --- the benchmark -----------------------------------------------------------------------

    def _reads(self, options) -> None:
        if not shutil.which("wrk"):
            raise CommandError("needs wrk (apt-get install wrk)")
        if not options["cache_url"].startswith("redis"):
            raise CommandError("needs a Redis cache: --cache-url redis://127.0.0.1:6379/<db>")
        database_url = options["database_url"] or self._default_database_url()
        sizes = sorted({int(size) for size in options["sizes"].split(",")})
        keep = options["keep_databases"]
        workdir = Path(tempfile.mkdtemp(prefix="aeon-readbench-"))
        env = os.environ | {
            "CACHE_URL": options["cache_url"],
            "AEON_ENV": "production",
            "SECRET_KEY": secrets.token_urlsafe(40),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DEBUG": "0",
            "DB_CONN_MAX_AGE": "600",
            "LOG_LEVEL": "WARNING",
            "AEON_DATA_DIR": str(workdir),
            # The board's settings plus the floor's route and this app's commands, in the
            # servers and in every child (benchtools/settings.py): config/ routes no floor.
            "DJANGO_SETTINGS_MODULE": "benchtools.settings",
            "AEON_BENCH_FLOOR_DIR": str(workdir / "floor"),
            "AEON_BOARD_KEY_FILE": str(self._board_key(database_url, workdir, keep)),
        }
        env.pop("CELERY_BROKER_URL", None)  # recompute inline while loading
        env.pop("DATABASE_REPLICA_URL", None)
        (workdir / "floor").mkdir()
        (workdir / "report.lua").write_text(WRK_REPORT)
        self._manage(env, "create_board_key", "--if-missing")  # signed as deployed
        self._manage(env, "collectstatic", "--noinput", "-v0")  # production storage is hashed

        report = {
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "load_average": list(os.getloadavg())},
            "settings": {
                key: options[key]
                for key in (
                    "duration",
                    "rounds",
                    "connections",
                    "wrk_threads",
                    "workers",
                    "threads",
                )
            },
            "sizes": {},
        }
        databases: dict[int, str] = {}
        previous = None
        try:
            for size in sizes:
                databases[size] = self._sized_database(database_url, size, previous, keep)
                sized = env | {"DATABASE_URL": databases[size]}
                self._manage(sized, "migrate", "--noinput", "-v0")
                loaded = self._benchmark_count(databases[size])
                if loaded < size:
                    self.stdout.write(f"loading benchmarks {loaded} … {size - 1} into {size}")
                    started = time.monotonic()
                    self._load_range(sized, loaded, size - loaded, options["load_jobs"])
                    report.setdefault("load_seconds", {})[str(size)] = round(
                        time.monotonic() - started
                    )
                else:
                    # A kept database: its read models are rewritten from its benchmarks (seconds
                    # at 10,000), so a load cut short before its recompute, or read models this
                    # code adds, never leave the reads measuring stale rows.
                    self._manage(sized, "bench", "load-reads", "--count", "0")
                previous = databases[size]
            for size in sizes:
                # A new generation: nothing cached by an earlier run on a kept database is served.
                self._manage(env | {"DATABASE_URL": databases[size]}, "shell", "-c", BUMP)
            report["load_average_before"] = list(os.getloadavg())
            report["sizes"] = self._measure(env, databases, workdir, options)
            report["load_average_after"] = list(os.getloadavg())
        finally:
            if not keep:
                for url in reversed(databases.values()):
                    self._drop_database(url)
        report["goals"] = goals(report["sizes"])
        self._print(report)
        output = Path(
            options["output"] or ROOT / "var" / "bench" / f"reads-{int(time.time())}.json"
        )
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(report, indent=2) + "\n")
        self.stdout.write(f"written to {output}")
        shutil.rmtree(workdir, ignore_errors=True)

    @staticmethod
    def _board_key(database_url: str, workdir: Path, keep: bool) -> Path:
        """Where the board's signing key lives: with kept databases, beside them under
        var/bench/ (the manifests they hold stay signed by the key that serves them), else in
        the work folder. Without one every recorded run logs that it is in no signed manifest."""
        if not keep:
            return workdir / "board-key.pem"
        name = urlsplit(database_url).path.lstrip("/")
        return ROOT / "var" / "bench" / f"{name}-board-key.pem"

    def _default_database_url(self) -> str:
        db = settings.DATABASES["default"]
        if db["ENGINE"] != "django.db.backends.postgresql":
            raise CommandError("needs PostgreSQL: set DATABASE_URL or --database-url")
        user, host, port = db["USER"] or "postgres", db["HOST"] or "127.0.0.1", db["PORT"] or 5432
        return f"postgres://{user}@{host}:{port}/{db['NAME']}_readbench"

    @staticmethod
    def _sized_database(url: str, size: int, previous: str | None, keep: bool) -> str:
        """The database of one size (`<name><size>`). Kept: reused when it exists. Otherwise
        made afresh (an existing one dropped first): a copy of the next smaller size's
        (PostgreSQL copies it in seconds; loading takes minutes), or empty for the smallest."""
        import psycopg

        parts = urlsplit(url)
        base = parts.path.lstrip("/")
        if not re.fullmatch(r"[A-Za-z0-9_]+", base) or not base.endswith("bench"):
            raise CommandError(f"refusing to use {base!r}: its name must end in 'bench'")
        name = f"{base}{size}"
        sized = urlunsplit(parts._replace(path=f"/{name}"))
        admin = urlunsplit(parts._replace(path="/postgres"))
        with psycopg.connect(admin, autocommit=True) as connection:
            found = connection.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (name,)
            ).fetchone()
            if found and keep:
                return sized
            if found:
                connection.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            template = f' TEMPLATE "{urlsplit(previous).path.lstrip("/")}"' if previous else ""
            connection.execute(f'CREATE DATABASE "{name}"{template}')
        return sized

    @staticmethod
    def _drop_database(url: str) -> None:
        import psycopg

        parts = urlsplit(url)
        admin = urlunsplit(parts._replace(path="/postgres"))
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')

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

    def _measure(self, env: dict, databases: dict[int, str], workdir: Path, options) -> dict:
        """Every read at every size next to its floor, in alternating rounds, all sizes served
        at once; then every read again on servers whose answer cache keeps nothing."""
        sizes = sorted(databases)
        results: dict[str, dict] = {str(size): {} for size in sizes}
        with ExitStack() as stack:
            servers = {
                size: stack.enter_context(self._server(env | {"DATABASE_URL": url}, options))
                for size, url in databases.items()
            }
            paths = {size: dict(self._paths(server.base)) for size, server in servers.items()}
            for name, _ in TARGETS:
                bodies = {}
                for size in sizes:
                    if name not in paths[size]:
                        continue
                    try:  # warm: fills the answer cache
                        bodies[size] = fetch(servers[size].base + paths[size][name])
                    except urllib.error.HTTPError as error:
                        self.stderr.write(
                            f"  {paths[size][name]} answers {error.code}: not measured"
                        )
                if not bodies:
                    continue
                # The floor answers the largest size's bytes, on that size's server.
                floor_size = max(bodies)
                body, content_type = bodies[floor_size]
                (workdir / "floor" / f"{name}.body").write_bytes(body)
                (workdir / "floor" / f"{name}.type").write_text(content_type)
                floor = servers[floor_size]._replace(
                    url=f"{servers[floor_size].base}/_bench/floor/{name}"
                )
                fetch(floor.url)
                targets = {
                    str(size): servers[size]._replace(url=servers[size].base + paths[size][name])
                    for size in bodies
                } | {"floor": floor}
                self.stdout.write(
                    f"  wrk {name} ({', '.join(f'{len(b)} bytes at {s}' for s, (b, _) in bodies.items())}) "
                    f"and its floor, {options['rounds']} rounds"
                )
                load = list(os.getloadavg())
                runs = self._rounds(targets, workdir, options)
                for size, (answer_body, _) in bodies.items():
                    results[str(size)][name] = {
                        "path": paths[size][name],
                        "bytes": len(answer_body),
                        "floor_bytes": len(body),
                        "load_average": load,
                        "answer": median_run(runs[str(size)]),
                        "floor": median_run(runs["floor"]),
                        "rounds": {"answer": runs[str(size)], "floor": runs["floor"]},
                    }
        uncached = env | {"AEON_ANSWER_CACHE_SECONDS": "0"}
        with ExitStack() as stack:
            servers = {
                size: stack.enter_context(self._server(uncached | {"DATABASE_URL": url}, options))
                for size, url in databases.items()
            }
            for name, _ in TARGETS:
                targets = {
                    str(size): servers[size]._replace(
                        url=servers[size].base + results[str(size)][name]["path"]
                    )
                    for size in sizes
                    if name in results[str(size)]
                }
                if not targets:
                    continue
                self.stdout.write(f"  wrk {name} uncached, {options['rounds']} rounds")
                runs = self._rounds(targets, workdir, options)
                for size, measured in runs.items():
                    results[size][name]["uncached"] = median_run(measured)
                    results[size][name]["rounds"]["uncached"] = measured
        return results

    def _rounds(self, targets: dict, workdir: Path, options) -> dict[str, list[dict]]:
        """Each target measured once a round, `--rounds` rounds, the order turned by one each
        round (no target always runs first or right after another): what the machine does
        meanwhile falls on every target alike."""
        for target in targets.values():
            self._warm(target.url, options)
        labels = list(targets)
        runs: dict[str, list[dict]] = {label: [] for label in labels}
        for number in range(max(1, options["rounds"])):
            turn = number % len(labels)
            for label in labels[turn:] + labels[:turn]:
                runs[label].append(self._wrk(targets[label], workdir, options))
        return runs

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
            yield Server(base, server.pid, base)
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
    def _wrk(target: "Server", workdir: Path, options) -> dict:
        """One wrk run against `target.url`, and the CPU time its server spent meanwhile."""
        cpu_before = tree_cpu_seconds(target.pid)
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
                target.url,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        cpu = tree_cpu_seconds(target.pid) - cpu_before
        raw = json.loads(completed.stdout.strip().splitlines()[-1])
        seconds = raw["duration_us"] / 1e6
        return {
            "requests_per_second": round(raw["requests"] / seconds, 1),
            "p50_ms": raw["p50_us"] / 1000,
            "p95_ms": raw["p95_us"] / 1000,
            "p99_ms": raw["p99_us"] / 1000,
            "max_ms": raw["max_us"] / 1000,
            "cpu_ms_per_request": round(1000 * cpu / raw["requests"], 3) if raw["requests"] else 0,
            "requests": raw["requests"],
            "errors": raw["errors"],
            "non_2xx_3xx": raw["non_2xx_3xx"],
        }

    def _print(self, report: dict) -> None:
        line = (
            f"{'size':>6} {'read':<20} {'bytes':>7} {'req/s':>8} {'floor':>8} {'%floor':>7} "
            f"{'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'errors':>6} {'cpu ms':>7} "
            f"{'fl cpu':>7} {'miss r/s':>8} {'miss p50':>8} {'miss p95':>8}"
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
                    f"{answer['cpu_ms_per_request']:>7.2f} {floor['cpu_ms_per_request']:>7.2f} "
                    f"{miss.get('requests_per_second', 0):>8.0f} {miss.get('p50_ms', 0):>8.1f} "
                    f"{miss.get('p95_ms', 0):>8.1f}"
                )
        for goal in report["goals"]:
            mark = "met " if goal["met"] else "MISS"
            self.stdout.write(f"[{mark}] {goal['goal']}: {goal['measured']}")
        rounds = report["settings"]["rounds"]
        before, after = report.get("load_average_before"), report.get("load_average_after")
        self.stdout.write(
            f"Each figure is the median of {rounds} rounds; in each round every size and the "
            "floor (the largest size's bytes from memory, on its server) ran once, all sizes "
            "served at once. cpu ms: CPU time of the server per request (fl: the floor's). "
            "miss: the same read on servers whose answer cache keeps nothing (every request "
            "reads the database and renders). Load average before "
            f"{before[0] if before else 0:.1f}, after {after[0] if after else 0:.1f}: numbers "
            "from a shared or busy machine are indicative only; measure on a quiet one."
        )


def fetch(url: str) -> tuple[bytes, str]:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return answer.read(), answer.headers.get("Content-Type", "application/octet-stream")


def paired_ratio(top: list[dict], bottom: list[dict], key: str = "requests_per_second") -> float:
    """The median over rounds of top / bottom, each round's pair measured minutes apart at most:
    drift of the machine between rounds cancels out. 0 when nothing can be compared."""
    ratios = [a[key] / b[key] for a, b in zip(top, bottom, strict=False) if b[key]]
    return statistics.median(ratios) if ratios else 0.0


def share_of_floor(result: dict) -> float:
    """The answer's requests per second over the floor's, paired round by round."""
    rounds = result.get("rounds")
    if rounds:
        return paired_ratio(rounds["answer"], rounds["floor"])
    floor = result["floor"]["requests_per_second"]
    return result["answer"]["requests_per_second"] / floor if floor else 0.0


def size_change(
    sizes: dict, name: str, smallest: str, largest: str, side: str, key: str = "requests_per_second"
) -> float | None:
    """How a figure of the read changed from the smallest to the largest size, paired round by
    round (both sizes ran in the same rounds); None when one side was not measured."""
    small, large = sizes[smallest][name], sizes[largest][name]
    if side not in small or side not in large:
        return None
    rounds = (small.get("rounds") or {}).get(side), (large.get("rounds") or {}).get(side)
    if all(rounds):
        ratio = paired_ratio(rounds[1], rounds[0], key)
    else:
        before = small[side].get(key) or 0
        ratio = large[side].get(key, 0) / before if before else 0.0
    return ratio - 1 if ratio else None


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
            change = size_change(sizes, name, smallest, largest, "answer")
            if change is not None:
                cpu = size_change(sizes, name, smallest, largest, "answer", "cpu_ms_per_request")
                found.append(
                    {
                        "goal": f"{name}: within 10 % between {smallest} and {largest}",
                        "measured": f"{change:+.0%}"
                        + (f" (CPU per request {cpu:+.0%})" if cpu is not None else ""),
                        "met": abs(change) <= 0.10,
                    }
                )
            change = size_change(sizes, name, smallest, largest, "uncached")
            if change is not None:
                missed = sizes[largest][name]["uncached"]
                found.append(
                    {
                        "goal": f"{name} uncached: within 10 % between {smallest} and {largest}",
                        "measured": f"{change:+.0%} ({missed['requests_per_second']:.0f} "
                        f"req/s, p95 {missed['p95_ms']:.1f} ms)",
                        "met": abs(change) <= 0.10,
                    }
                )
    return found
