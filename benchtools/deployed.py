"""The board as it is deployed, started for a benchmark: `make prod`'s environment and set-up
(`config.prodstack.prepared_environment` and `set_up`: production settings, migrations, static
files, a board key) and two of its parts as `make prod` starts them (`config.prodstack.programs`):
gunicorn with config/gunicorn.conf.py and a Celery worker consuming the Redis broker. Nothing
here restates their options; the benchmark only chooses the port, the database, the broker, the
answer cache and a data folder of its own, and lifts the per-IP rate limit (one client sends
every request). Each part's output goes to a file under the data folder: gunicorn's JSON access
log there gives the board's own time of each request (`ms`)."""

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from benchtools.procfs import children_of, free_port, tree_cpu_seconds
from config import prodstack
from config.supervision import ROOT


@dataclass
class DeployedBoard:
    env: dict[str, str]
    data_dir: Path
    parts: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.env['PORT']}"

    def web_workers(self) -> list[int]:
        """gunicorn's worker processes (its master's children)."""
        return children_of(self.parts["web"].pid)

    def worker_cpu_seconds(self) -> float:
        """CPU time spent so far by the Celery worker."""
        return tree_cpu_seconds(self.parts["worker"].pid)

    def board_ms(self, request_line: str, timeout: float = 5.0) -> int:
        """The board's own time of a request (gunicorn's access log `ms`), waiting briefly for
        the line (gunicorn writes it once the answer is sent)."""
        log = self.data_dir / "web.log"
        deadline = time.monotonic() + timeout
        while True:
            for line in reversed(log.read_text(errors="replace").splitlines()):
                if request_line in line and line.startswith("{"):
                    entry = json.loads(line)
                    if entry.get("message") == "request":
                        return int(entry["ms"])
            if time.monotonic() > deadline:
                raise RuntimeError(f"no access-log line for {request_line!r}")
            time.sleep(0.02)

    def stop(self) -> None:
        for part in reversed(list(self.parts.values())):
            if part.poll() is None:
                part.send_signal(signal.SIGTERM)
        for part in self.parts.values():
            try:
                part.wait(timeout=60)
            except subprocess.TimeoutExpired:
                part.kill()


def stop_on_sigterm() -> None:
    """A SIGTERM to the benchmark (a `kill`, a supervisor, a CI timeout) unwinds it as Ctrl-C
    does, so that its `finally` blocks stop the servers it started and drop what it made: left
    alone, SIGTERM ends the process at once and its gunicorn and Celery worker run on."""

    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)


def environment(*, database_url: str, broker: str, cache: str, data_dir: Path) -> dict[str, str]:
    """`make prod`'s environment for this benchmark's board."""
    chosen = dict(os.environ) | {
        "PORT": str(free_port()),
        "HOST": "127.0.0.1",
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": broker,
        "CACHE_URL": cache,
        "AEON_DATA_DIR": str(data_dir),
        # One client (127.0.0.1) sends every request of the benchmark; each key stays far
        # below its own limit and quota (one enrolment, one session, one final).
        "AEON_RATE_LIMIT_PER_IP": "1000000",
    }
    for name in ("SECRET_KEY", "AEON_BOARD_KEY_FILE", "AEON_SITE_URL", "GUNICORN_BIND"):
        chosen.pop(name, None)  # the data folder's own, as `make prod` makes them
    with open(data_dir / "setup.log", "a") as out, contextlib.redirect_stdout(out):
        return prodstack.prepared_environment(chosen)


def gather_statistics(database_url: str) -> None:
    """ANALYZE the board's database, as PostgreSQL's autovacuum keeps its planner statistics
    where the board is deployed (docs/operations.md §The database). This machine's server runs
    with autovacuum off (its CI configuration), so a bench database grown by earlier runs, or
    loaded a moment ago, was never analyzed: the planner took the default guesses and, with 476
    benchmarks sharing the bench's one recipe, looked a final's job group up through the
    recipe's index, reading every benchmark (3.1 ms against 0.1 ms once analyzed)."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("ANALYZE")


def start(env: dict[str, str], *, worker: bool = True) -> DeployedBoard:
    """Set up as `make prod` does, then start gunicorn and (unless `worker` is false) the Celery
    worker with `make prod`'s commands; answers once /healthz does."""
    data_dir = Path(env["AEON_DATA_DIR"])
    with open(data_dir / "setup.log", "a") as out:
        try:
            _quiet_set_up(env, out)
        except prodstack.SetupFailed as exc:
            raise RuntimeError(f"set-up failed: {exc} (see {data_dir / 'setup.log'})") from None
    programs = prodstack.programs(env)
    board = DeployedBoard(env, data_dir)
    for name in ("web", "worker") if worker else ("web",):
        out = open(data_dir / f"{name}.log", "w")  # noqa: SIM115 - the part holds it
        board.parts[name] = subprocess.Popen(
            programs[name]["command"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        _wait_ready(board)
    except BaseException:
        board.stop()
        raise
    return board


def _quiet_set_up(env: dict[str, str], out) -> None:
    """`prodstack.set_up`, its JSON lines written to `out` rather than among the bench's."""
    with contextlib.redirect_stdout(out):
        prodstack.set_up(env)


def _wait_ready(board: DeployedBoard) -> None:
    for _ in range(480):
        for name, part in board.parts.items():
            if part.poll() is not None:
                raise RuntimeError(f"{name} exited: see {board.data_dir / (name + '.log')}")
        try:
            with urllib.request.urlopen(board.base + "/healthz", timeout=2):
                break
        except OSError:
            time.sleep(0.25)
    else:
        raise RuntimeError("gunicorn did not answer within two minutes")
    if "worker" in board.parts:
        _wait_worker_ready(board)


def _wait_worker_ready(board: DeployedBoard) -> None:
    log = board.data_dir / "worker.log"
    for _ in range(240):
        if "ready" in log.read_text(errors="replace"):
            return
        if board.parts["worker"].poll() is not None:
            raise RuntimeError(f"the Celery worker exited: see {log}")
        time.sleep(0.25)
    raise RuntimeError("the Celery worker did not say it is ready within a minute")
