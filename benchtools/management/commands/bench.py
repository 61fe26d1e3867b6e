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

The steps are benchtools/read_bench.py's, the measuring benchtools/wrk.py's, the goals and the
table benchtools/read_goals.py's; this command runs them.
"""

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchtools import deployed, read_bench, read_goals
from benchtools.wrk import ROOT, WRK_REPORT


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
        reads.add_argument(
            "--reads",
            default="",
            help="comma-separated names of the reads to measure (default: every one; names: "
            + ", ".join(name for name, _ in read_bench.TARGETS)
            + ")",
        )
        reads.add_argument("--connections", type=int, default=16)
        reads.add_argument("--wrk-threads", type=int, default=2)
        reads.add_argument(
            "--workers", type=int, help="gunicorn processes (default: config/gunicorn.conf.py's)"
        )
        reads.add_argument(
            "--threads", type=int, help="threads per process (default: config/gunicorn.conf.py's)"
        )
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
        deployed.stop_on_sigterm()
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
        known = [name for name, _ in read_bench.TARGETS]
        options["reads"] = [name for name in options["reads"].split(",") if name] or known
        if unknown := set(options["reads"]) - set(known):
            raise CommandError(f"no such read: {', '.join(sorted(unknown))}")
        database_url = options["database_url"] or read_bench.default_database_url()
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
            "AEON_BOARD_KEY_FILE": str(read_bench.board_key(database_url, workdir, keep)),
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
                databases[size] = read_bench.sized_database(database_url, size, previous, keep)
                sized = env | {"DATABASE_URL": databases[size]}
                self._manage(sized, "migrate", "--noinput", "-v0")
                loaded = read_bench.benchmark_count(databases[size])
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
                deployed.gather_statistics(databases[size])
                previous = databases[size]
            for size in sizes:
                # A new generation: nothing cached by an earlier run on a kept database is served.
                self._manage(
                    env | {"DATABASE_URL": databases[size]}, "shell", "-c", read_bench.BUMP
                )
            report["load_average_before"] = list(os.getloadavg())
            report["sizes"] = read_bench.measure(
                env, databases, workdir, options, self.stdout.write, self.stderr.write
            )
            report["load_average_after"] = list(os.getloadavg())
        finally:
            if not keep:
                for url in reversed(databases.values()):
                    read_bench.drop_database(url)
        report["goals"] = read_goals.goals(report["sizes"])
        for line in read_goals.report_lines(report):
            self.stdout.write(line)
        output = Path(
            options["output"] or ROOT / "var" / "bench" / f"reads-{int(time.time())}.json"
        )
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(report, indent=2) + "\n")
        self.stdout.write(f"written to {output}")
        shutil.rmtree(workdir, ignore_errors=True)

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
