"""The results route checks the run and its token before it reads the body (docs/protocol.md):
sixteen concurrent 128 MiB uploads with a wrong token to gunicorn, as deployed, are each refused
403 TOKEN_MISMATCH with an ingest-log row, and the workers' memory does not grow by the body
size; the per-IP limit still applies; the development server answers the same."""

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest
from django.db import connection

from demo.podclient import USER_AGENT, PodClient
from submissions.models import IngestLogEntry
from tests.podchannel import LIVE_DB, MODEL, TEXT_SUITE, results_path
from tests.processes import children_of, free_port, memory_kib, reset_peak, spawn

BODY_SIZE = 128 * 1024 * 1024  # the results route's cap: declared, never refused for size
CHUNK = b"x" * (1024 * 1024)
UPLOADS = 16
MIB = 1024 * 1024


@dataclass
class Upload:
    status: int
    body: dict
    sent: int  # body bytes the server let in before it answered


def upload(base_url: str, path: str, token: str, size: int = BODY_SIZE) -> Upload:
    """POST `size` declared bytes, sending the body until the server answers (as a client that
    reads early answers does), then read the answer."""
    url = urlsplit(base_url)
    sock = socket.create_connection((url.hostname, url.port), timeout=60)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {url.netloc}\r\nUser-Agent: {USER_AGENT}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {size}\r\n"
        f"X-Aeon-Run-Token: {token}\r\n\r\n"
    )
    sent = 0
    try:
        sock.sendall(head.encode())
        while sent < size:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            try:
                sent += sock.send(CHUNK[: size - sent])
            except (BrokenPipeError, ConnectionResetError):
                break
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < _length(answer):
            data = sock.recv(65536)
            if not data:
                break
            answer += data
    finally:
        sock.close()
    head_bytes, _, payload = answer.partition(b"\r\n\r\n")
    status = int(head_bytes.split(b" ", 2)[1])
    return Upload(status, json.loads(payload[: _length(answer)]), sent)


def _length(answer: bytes) -> int:
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 1 << 62


@pytest.fixture
def gunicorn_board(postgres, tmp_path):
    """The board under gunicorn as deployed (its threaded worker), on the test database."""
    db = connection.settings_dict
    port = free_port()
    env = os.environ | {
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "AEON_DATA_DIR": str(tmp_path),
        "AEON_HF_ENDPOINT": "http://127.0.0.1:9",
        "AEON_RATE_LIMIT_PER_IP": "40",
        "DEBUG": "0",
    }
    env.pop("CELERY_BROKER_URL", None)
    server = spawn(
        [sys.executable, "-m", "gunicorn", "config.wsgi", "--workers", "2", "--threads", "4"]
        + ["--worker-class", "gthread", "--timeout", "150", "--bind", f"127.0.0.1:{port}"],
        env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=2):
                    break
            except OSError:
                time.sleep(0.25)
        yield url, server.pid
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            output, _ = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            output, _ = server.communicate()
        print(output[-3000:])


def test_sixteen_128_mib_uploads_with_a_wrong_token_are_refused_unread(gunicorn_board):
    url, master = gunicorn_board
    pod = PodClient(url, timeout=60)
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    workers = children_of(master)
    assert len(workers) == 2
    before = {pid: memory_kib(pid)["VmRSS"] for pid in workers}
    for pid in workers:
        reset_peak(pid)  # VmHWM starts again from VmRSS

    answers: list[Upload] = []
    threads = [
        threading.Thread(
            target=lambda: answers.append(upload(url, results_path(session.run_id), "wrong"))
        )
        for _ in range(UPLOADS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert len(answers) == UPLOADS
    for answer in answers:
        assert (answer.status, answer.body["reason"]) == (403, "TOKEN_MISMATCH"), answer
        # The client stops at the answer: what it got in is socket buffers, not the body.
        assert answer.sent < 16 * MIB, answer.sent
    refused = IngestLogEntry.objects.filter(run_id=session.run_id, reason="TOKEN_MISMATCH")
    assert refused.count() == UPLOADS
    assert set(refused.values_list("status", "bytes")) == {(403, 0)}
    for pid in workers:
        growth = memory_kib(pid)["VmHWM"] - before[pid]
        assert growth * 1024 < 16 * MIB, (pid, growth)  # 16 bodies would be 2 GiB

    unknown = upload(url, results_path("no-such-run"), session.run_token)
    assert (unknown.status, unknown.body["reason"]) == (404, "RUN_NOT_FOUND")
    assert unknown.sent < 16 * MIB

    # The per-IP limit still counts these refusals (40 a window here): it answers 429 too.
    limited = [upload(url, results_path(session.run_id), "wrong") for _ in range(30)]
    assert {a.status for a in limited} <= {403, 429}
    assert limited[-1].status == 429 and limited[-1].body["reason"] == "RATE_LIMITED"
    assert IngestLogEntry.objects.filter(reason="RATE_LIMITED").exists()
    # The session was never touched: the right token still commits.
    assert pod.submit(session, {"target_class": "local_weights", "results": []}).status in (
        200,
        429,
    )


@LIVE_DB  # the refusal is read off a socket: the development server over HTTP
def test_the_development_server_refuses_a_wrong_token_before_the_body_too(pod):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")

    answer = upload(pod.base_url, results_path(session.run_id), "wrong", size=32 * MIB)

    assert (answer.status, answer.body["reason"]) == (403, "TOKEN_MISMATCH")
    entry = IngestLogEntry.objects.order_by("-pk").first()
    assert (entry.status, entry.reason, entry.bytes) == (403, "TOKEN_MISMATCH", 0)
