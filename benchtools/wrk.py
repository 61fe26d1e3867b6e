"""One read under load (docs/champions.md §The read benchmark): gunicorn serving a database as
deployed (config/gunicorn.conf.py), wrk against a URL of it with the CPU time the server spent
meanwhile, rounds that turn the order of the targets, and the median of a read's rounds."""

import json
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from django.core.management.base import CommandError

from benchtools.procfs import free_port, tree_cpu_seconds

ROOT = Path(__file__).resolve().parents[1]

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


def fetch(url: str) -> tuple[bytes, str]:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return answer.read(), answer.headers.get("Content-Type", "application/octet-stream")


@contextmanager
def serve(env: dict, options):
    """gunicorn as deployed (`-c config/gunicorn.conf.py`: its worker class, keep-alive and JSON
    access log, each request a line, written here to a file of the work folder as supervisord's
    pipe takes it in `make prod`); `--workers`/`--threads` set WEB_CONCURRENCY/GUNICORN_THREADS
    when given, else the configuration's defaults hold."""
    port = free_port()
    sizing = {
        "WEB_CONCURRENCY": options["workers"],
        "GUNICORN_THREADS": options["threads"],
    }
    served = (
        env
        | {"HOST": "127.0.0.1", "PORT": str(port)}
        | {name: str(value) for name, value in sizing.items() if value}
    )
    served.pop("GUNICORN_BIND", None)
    log = Path(env["AEON_DATA_DIR"]) / f"gunicorn-{port}.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi"],
            cwd=ROOT,
            env=served,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base)
        yield Server(base, server.pid, base)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def wait_ready(base: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            fetch(base + "/healthz")
            return
        except OSError:
            time.sleep(0.3)
    raise CommandError("gunicorn did not answer /healthz within 60 s")


def warm(url: str, options) -> None:
    """Unmeasured load first: every worker process has compiled its templates, opened its
    connections and (when caching) read the answer before the measured run starts."""
    fetch(url)
    if options["warmup"] > 0:
        subprocess.run(
            ["wrk", "-t1", f"-c{options['connections']}", f"-d{options['warmup']}s", url],
            capture_output=True,
            check=True,
        )


def wrk_run(target: "Server", workdir: Path, options) -> dict:
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


def rounds(targets: dict, workdir: Path, options) -> dict[str, list[dict]]:
    """Each target measured once a round, `--rounds` rounds, the order turned by one each
    round (no target always runs first or right after another): what the machine does
    meanwhile falls on every target alike."""
    for target in targets.values():
        warm(target.url, options)
    labels = list(targets)
    runs: dict[str, list[dict]] = {label: [] for label in labels}
    for number in range(max(1, options["rounds"])):
        turn = number % len(labels)
        for label in labels[turn:] + labels[:turn]:
            runs[label].append(wrk_run(targets[label], workdir, options))
    return runs
