"""`make prod` started by a test: the running stack (`Stack`), its start, its readiness and the
stop of whatever it leaves, shared by tests/test_prod_stack.py and tests/test_faults_under_load.py."""

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.boardjobs import read_api
from tests.hf_standin import HubStandIn
from tests.processes import descendants

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Stack:
    url: str
    process: subprocess.Popen
    log: Path
    data_dir: Path
    database_url: str
    hub: HubStandIn
    env: dict

    def lines(self) -> list[dict]:
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                found.append(json.loads(line))
        return found

    def worker_pid(self) -> int:
        """The pid of the worker supervisord last said runs: it says so once the worker has
        run `startsecs` (10 s), which a test right after the stack's start may come before."""
        deadline = time.monotonic() + 60
        while not (started := [e for e in self.lines() if e.get("message") == "worker started"]):
            assert time.monotonic() < deadline, "supervisord never said the worker started"
            time.sleep(0.5)
        return started[-1]["pid"]

    def ready(self) -> dict:
        return next(e for e in self.lines() if e["message"] == "ready")

    def replica(self) -> str:
        """gunicorn's own address, behind the front."""
        return f"http://{self.ready()['web']}"

    def served_again(self, seconds: float = 15) -> None:
        """Until the front sends requests to the replica again (it checks every 2 s)."""
        deadline = time.monotonic() + seconds
        while read_api_or_none(self.url, "/readyz") != 200:
            assert time.monotonic() < deadline, "the front never served the replica again"
            time.sleep(0.2)


def read_api_or_none(url: str, path: str) -> int | None:
    try:
        return read_api(url, path).status
    except OSError:
        return None


def start_make_prod(env: dict, log: Path) -> subprocess.Popen:
    with log.open("wb") as sink:
        return subprocess.Popen(
            ["make", "--no-print-directory", "prod"],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # as a terminal starts it: a process group of its own
        )


def wait_until_ready(process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 600
    while '"message": "ready"' not in log.read_text(errors="replace"):
        assert process.poll() is None, log.read_text()[-5000:]
        assert time.monotonic() < deadline, log.read_text()[-5000:]
        time.sleep(0.5)


def stop_leftovers(process: subprocess.Popen) -> None:
    if process.poll() is None:
        parts = descendants(process.pid)
        os.killpg(process.pid, signal.SIGKILL)
        for pid in parts:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    process.wait()
