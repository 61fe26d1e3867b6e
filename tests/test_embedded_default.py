"""The embedded default as `make run` starts it: SQLite and blobs in a data folder, Celery eager,
the development server started by `run_demo`, the demo loaded through the pod protocol.

Every test here starts the board as its own process tree, exactly as `make run` does (migrate,
then `manage.py run_demo` or `make run` itself), with its own data folder, a SQLite database in
it and a free port, so these tests run on SQLite in CI too. Pods talk to it over HTTP with the
real signing client, sending each request once (no retries): every answer is counted.

The demo load that waits out a 503 and the stops of `make run` are in tests/test_embedded_stops.py:
`.ci/run` runs the two files after the rest, side by side on two workers (docs/README.md §The test
suite).
"""

import collections
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from demo.bundles import (
    DEMO_JOBS,
    DEMO_MODELS,
    TEXT_SUITE_ID,
    job_bundles,
    text_checkpoints,
)
from demo.podclient import Answer, PodClient, PodNetworkError
from tests.processes import alive, descendants, free_port

ROOT = Path(__file__).resolve().parent.parent
LOADED = "Demo data loaded"
STOPPED = "The demo load stopped"
DEMO_LOAD_TIMEOUT = 900  # seconds; the load takes about a minute on a quiet machine

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads the process tree in /proc")


def embedded_env(data_dir: Path, port: int, **extra: str) -> dict:
    """The environment of `make run` on a fresh clone: nothing configured but the data folder,
    its SQLite file and the port (CI's PostgreSQL and Redis settings are removed)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AEON_", "DATABASE_URL", "CELERY_", "DJANGO_", "CACHE_URL"))
    }
    return env | {
        "AEON_DATA_DIR": str(data_dir),
        "DATABASE_URL": f"sqlite:///{data_dir / 'aeon.sqlite3'}",
        "PORT": str(port),
        "PYTHONUNBUFFERED": "1",
        "AEON_HF_ENDPOINT": "http://127.0.0.1:9",  # the demo's Hub answers are pre-filled
        **extra,
    }


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@dataclass
class EmbeddedBoard:
    """A board started as `make run` starts it, its output captured in a file."""

    process: subprocess.Popen
    url: str
    data_dir: Path
    log: Path
    seen: dict[int, str] = field(default_factory=dict)  # every process seen below the top one

    @property
    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, *texts: str, timeout: float = DEMO_LOAD_TIMEOUT) -> str:
        """Wait until one of `texts` appears in the output; returns it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            output = self.output
            for text in texts:
                if text in output:
                    return text
            if self.process.poll() is not None:
                pytest.fail(f"exited with {self.process.returncode}:\n{output[-3000:]}")
            time.sleep(0.5)
        pytest.fail(f"none of {texts} within {timeout} s:\n{self.output[-3000:]}")

    def get(self, path: str) -> int:
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    def started_processes(self) -> dict[int, str]:
        """pid → command line of every process below the top one."""
        found = {pid: command_line(pid) for pid in descendants(self.process.pid)}
        self.seen.update(found)
        return found

    def stop(self, signum: int, *, group: bool = False) -> tuple[int, set[int]]:
        """Send `signum` to the top process (or its whole process group, as a terminal's Ctrl-C
        does); returns its exit status and the processes it had started that are still alive."""
        started = set(self.started_processes())
        if group:
            os.killpg(self.process.pid, signum)
        else:
            self.process.send_signal(signum)
        try:
            returncode = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"no stop within 60 s; processes:\n{self.states()}\n{self.output[-3000:]}")
        time.sleep(0.5)
        return returncode, {pid for pid in started if alive(pid)}

    def states(self) -> str:
        """Each live process of the board: its state, where the kernel holds it, its threads."""
        lines = []
        for pid in [self.process.pid, *self.started_processes()]:
            try:
                status = Path(f"/proc/{pid}/status").read_text().splitlines()
                wchan = Path(f"/proc/{pid}/wchan").read_text()
                threads = len(list(Path(f"/proc/{pid}/task").iterdir()))
            except OSError:
                continue
            state = next((line for line in status if line.startswith("State:")), "State: ?")
            lines.append(f"  {pid} {state} wchan={wchan} threads={threads} {command_line(pid)}")
        return "\n".join(lines)

    def kill_all(self) -> None:
        """Whatever a failed test left running, orphans included (same pid, same command)."""
        self.started_processes()
        for pid, line in self.seen.items():
            if alive(pid) and command_line(pid) == line:
                os.kill(pid, signal.SIGKILL)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


def start_board(data_dir: Path, *, make: bool = False, **env: str) -> EmbeddedBoard:
    """Start the board in a session of its own, as a terminal starts `make run`: either `make
    run` itself, or its steps (migrate a fresh SQLite database, make the development board key,
    then `run_demo`)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    environment = embedded_env(data_dir, port, **env)
    if make:
        command = ["make", "--no-print-directory", "run"]  # it chooses development itself
    else:
        environment["AEON_ENV"] = "development"  # as `make run` chooses it
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT,
            env=environment,
            check=True,
            timeout=300,
        )
        subprocess.run(
            [sys.executable, "manage.py", "create_board_key", "--if-missing"],
            cwd=ROOT,
            env=environment,
            check=True,
            timeout=120,
            capture_output=True,
        )
        command = [sys.executable, "manage.py", "run_demo", "--port", str(port)]
    log = data_dir / "make-run.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=environment,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return EmbeddedBoard(process, f"http://127.0.0.1:{port}", data_dir, log)


class CountingPod(PodClient):
    """A pod that sends every request once and counts every answer by status."""

    def __init__(self, base_url: str, statuses: collections.Counter, lock: threading.Lock):
        super().__init__(base_url, timeout=120)
        self.statuses, self.lock = statuses, lock

    def _send_once(self, method, path, body, headers) -> Answer:
        try:
            answer = super()._send_once(method, path, body, headers)
        except PodNetworkError as exc:
            with self.lock:
                self.statuses[f"network error: {exc}"] += 1
            raise
        with self.lock:
            self.statuses[answer.status] += 1
        return answer


def upload_job(pod: PodClient, model, started: str) -> list:
    """One comprehensive job with its text checkpoints; the final answers' statuses."""
    finals = []
    for board, suite_id, name, bundle in job_bundles(model, started=started):
        checkpoints = text_checkpoints(bundle) if suite_id == TEXT_SUITE_ID else None
        try:
            finals.append(pod.submit_run(name, suite_id, board, bundle, checkpoints).status)
        except (RuntimeError, PodNetworkError) as exc:  # open_run or a checkpoint refused
            finals.append(str(exc))
    return finals


@dataclass
class Traffic:
    statuses: collections.Counter = field(default_factory=collections.Counter)
    finals: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def four_pods_and_a_poller(url: str) -> tuple[Traffic, Traffic]:
    """Four pods upload whole comprehensive jobs at once while a client asks for an enroll
    challenge every 1.5 s; returns (pods' traffic, poller's traffic)."""
    pods, poller = Traffic(), Traffic()
    done = threading.Event()

    def poll():
        client = CountingPod(url, poller.statuses, poller.lock)
        while not done.is_set():
            try:
                client.send("GET", "/api/v1/enroll/challenge")
            except PodNetworkError:
                pass  # counted
            done.wait(1.5)

    def upload(index: int):
        pod = CountingPod(url, pods.statuses, pods.lock)
        finals = upload_job(pod, DEMO_MODELS[index], f"2027-02-0{index + 1}T08:00:00Z")
        with pods.lock:
            pods.finals.extend(finals)

    polling = threading.Thread(target=poll)
    polling.start()
    uploads = [threading.Thread(target=upload, args=(i,)) for i in range(4)]
    for thread in uploads:
        thread.start()
    for thread in uploads:
        thread.join()
    done.set()
    polling.join()
    return pods, poller


# --- `make run` under load: four pods during the demo load, a local pod right after, SIGTERM ---


@dataclass
class BusyBoard:
    pods: Traffic
    poller: Traffic
    loading_when_pods_started: bool
    demo_outcome: str
    output: str
    after_load: Traffic
    sigterm_status: int
    started_processes: dict[int, str]
    left_alive: set[int]
    board_page: str  # `/` once the demo is loaded
    throughput_crowns: list[dict]
    benchmarks: list[dict]  # every public benchmark once the demo is loaded


@pytest.fixture(scope="module")
def busy_board(tmp_path_factory) -> BusyBoard:
    board = start_board(tmp_path_factory.mktemp("busy-make-run"))
    try:
        board.wait_for("Loading demo data", timeout=300)
        loading = LOADED not in board.output
        pods, poller = four_pods_and_a_poller(board.url)
        outcome = board.wait_for(LOADED, STOPPED)
        after = Traffic()
        local_pod = CountingPod(board.url, after.statuses, after.lock)
        after.finals = upload_job(local_pod, DEMO_MODELS[5], "2027-02-09T08:00:00Z")
        page = read_text(board.url + "/")
        crowns = json.loads(read_text(board.url + "/api/v1/champions?axis=throughput"))
        listed = json.loads(read_text(board.url + "/api/v1/benchmarks?page_size=200"))
        started = board.started_processes()
        status, left = board.stop(signal.SIGTERM)
        return BusyBoard(
            pods,
            poller,
            loading,
            outcome,
            board.output,
            after,
            status,
            started,
            left,
            page,
            crowns["champions"],
            listed["results"],
        )
    finally:
        board.kill_all()


def test_four_pods_uploading_during_the_demo_load_get_only_200(busy_board):
    assert busy_board.loading_when_pods_started
    bundles = sum(len(job_bundles(DEMO_MODELS[i])) for i in range(4))
    assert busy_board.pods.finals == [200] * bundles
    assert set(busy_board.pods.statuses) == {200}, busy_board.pods.statuses
    assert busy_board.pods.statuses[200] > 150
    assert set(busy_board.poller.statuses) == {200}, busy_board.poller.statuses


def test_the_demo_load_completes_beside_them_without_a_503(busy_board):
    assert busy_board.demo_outcome == LOADED, busy_board.output[-3000:]
    for sign_of_a_refusal in ("503 UNAVAILABLE", "Service Unavailable", "database is locked"):
        assert sign_of_a_refusal not in busy_board.output


def test_a_local_pod_commits_without_a_429_right_after_the_demo_load(busy_board):
    summary = next(line for line in busy_board.output.splitlines() if LOADED in line)
    assert "RATE_LIMITED" not in summary  # the demo pods themselves were never held back
    assert busy_board.after_load.finals == [200] * len(job_bundles(DEMO_MODELS[5]))
    assert set(busy_board.after_load.statuses) == {200}, busy_board.after_load.statuses


def read_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read().decode()


def test_the_demo_board_crowns_three_classes_and_names_the_spark_cohort(busy_board):
    crowns = {c["hardware_class"]["name"]: c for c in busy_board.throughput_crowns}
    assert len(crowns) >= 3, sorted(crowns)
    spark = crowns["Single DGX Spark"]
    assert re.fullmatch(r"[a-z]+ @ c\d+", spark["cohort"]), spark["cohort"]
    # The board opens on the Single DGX Spark champions, the throughput card naming its cohort.
    assert re.search(r"Champions on <a [^>]+>Single DGX Spark</a>", busy_board.board_page)
    card = busy_board.board_page.split('data-axis="throughput"', 1)[1].split("</article>")[0]
    assert spark["cohort"] in card and spark["model"] in card


def test_no_demo_benchmark_claims_more_than_its_roofline(busy_board):
    # Every demo model has facts (demo/data/hub_facts.json) and figures within its bound.
    assert len(busy_board.benchmarks) >= len(DEMO_JOBS)
    beyond = [b["id"] for b in busy_board.benchmarks if "beyond_roofline" in b["badges"]]
    assert beyond == []


def test_sigterm_stops_run_demo_and_the_server_it_started(busy_board):
    assert busy_board.sigterm_status == 0
    assert any("runserver" in line for line in busy_board.started_processes.values())
    assert busy_board.left_alive == set()


# --- a database lock during the demo load --------------------------------------------------


def hold_write_lock(database: Path) -> sqlite3.Connection:
    """Take SQLite's write lock from outside the board, as another program could."""
    connection = sqlite3.connect(database, timeout=60, isolation_level=None)
    connection.execute("BEGIN IMMEDIATE")
    return connection


def test_a_demo_load_that_still_fails_is_reported_and_the_board_keeps_serving(tmp_path):
    board = start_board(tmp_path / "board", AEON_SQLITE_BUSY_TIMEOUT_SECONDS="1")
    try:
        board.wait_for("Loading demo data", timeout=300)
        lock = hold_write_lock(board.data_dir / "aeon.sqlite3")
        # Held past every retry of the pod (about 30 s): the load gives up and says so.
        board.wait_for(STOPPED, LOADED, timeout=180)
        assert STOPPED in board.output and "load_demo --url" in board.output
        assert board.process.poll() is None
        assert board.get("/") == 200
        lock.execute("ROLLBACK")
        lock.close()
        pod = CountingPod(board.url, collections.Counter(), threading.Lock())
        assert pod.enroll().status == 200  # and it takes pods again once the lock is gone
        status, left = board.stop(signal.SIGINT)
        assert (status, left) == (0, set())
    finally:
        board.kill_all()


# --- rate limits: development sized for the demo, production as it was ------------------------


@pytest.mark.parametrize(
    ("env", "limits"),
    [
        ({"AEON_ENV": "development"}, "3000 1500 60"),
        (
            {"AEON_ENV": "production", "SECRET_KEY": "x" * 50, "ALLOWED_HOSTS": "b.example"},
            "600 300 60",
        ),
    ],
    ids=["development", "production"],
)
def test_only_the_development_configuration_raises_the_rate_limits(tmp_path, env, limits):
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings as s; "
            "print(s.AEON_RATE_LIMIT_PER_IP, s.AEON_RATE_LIMIT_PER_KEY, s.AEON_RATE_WINDOW_SECONDS)",
        ],
        cwd=ROOT,
        env=embedded_env(tmp_path, free_port(), DJANGO_SETTINGS_MODULE="config.settings", **env),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert shown.stdout.strip().splitlines()[-1] == limits
