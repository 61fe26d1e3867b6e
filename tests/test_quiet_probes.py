"""Gunicorn as deployed (config/gunicorn.conf.py) logs no line for a probe answered 200 — Caddy
asks each replica's /healthz every 2 s — and still logs a draining replica's 503 and every other
request (docs/operations.md §Logs)."""

import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request

from tests.processes import free_port, spawn


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


def started(url: str) -> int | None:
    try:
        return status_of(url + "/healthz")
    except OSError:  # not listening yet
        return None


def test_probes_answered_200_leave_no_access_line(tmp_path):
    port, drain = free_port(), tmp_path / "draining"
    env = os.environ | {
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "1",
        "GUNICORN_THREADS": "2",
        "AEON_DATA_DIR": str(tmp_path),
        "AEON_DRAIN_FILE": str(drain),
        "DEBUG": "0",
    }
    server = spawn(
        [sys.executable, "-m", "gunicorn", "--config", "config/gunicorn.conf.py", "config.wsgi"],
        env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while started(url) != 200:
            assert time.monotonic() < deadline, "gunicorn did not start"
            time.sleep(0.25)
        assert [status_of(url + "/healthz") for _ in range(3)] == [200] * 3
        drain.touch()
        assert status_of(url + "/healthz") == 503
        assert status_of(url + "/api/v1/no-such-route") == 404
    finally:
        server.send_signal(signal.SIGTERM)
        output, _ = server.communicate(timeout=60)
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    requests = [
        (line["request"], line["status"]) for line in lines if line["logger"] == "gunicorn.access"
    ]
    assert requests == [
        ("GET /healthz HTTP/1.1", 503),
        ("GET /api/v1/no-such-route HTTP/1.1", 404),
    ], output
