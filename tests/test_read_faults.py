"""Reads under faults (issue 20 points 11-12, docs/operations.md §Faults): with the answer cache's
Redis gone, reads are served from the database; with PostgreSQL unreachable, every read answers
503 with Retry-After (JSON with a reason code under /api/, a page elsewhere), never 500, and a
streamed export answers 503 before its status line instead of 200 and a cut body."""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from demo.loader import prefill_hub_cache
from tests.championjobs import GEMMA_816, submit
from tests.private_servers import PrivateRedis
from tests.processes import free_port

ROOT = Path(__file__).resolve().parent.parent
CHAMPIONS = "/api/recipes/champions"


def wait_for(check, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.1)


@pytest.fixture
def cache_redis(tmp_path, settings):
    server = PrivateRedis(tmp_path)
    server.start()
    settings.CACHE_URL = server.url
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": server.url,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.django_db(transaction=True)
def test_with_the_cache_redis_gone_reads_are_served_from_the_database(cache_redis, client, pod):
    prefill_hub_cache()
    benchmark_id = submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    paths = [CHAMPIONS, "/api/v1/benchmarks", f"/api/v1/benchmarks/{benchmark_id}", "/"]
    paths += [f"/benchmarks/{benchmark_id}/"]
    before = {path: client.get(path) for path in paths}
    assert {path: r.status_code for path, r in before.items()} == dict.fromkeys(paths, 200)

    cache_redis.stop()
    assert not cache_redis.answers()
    for path in paths:
        during = client.get(path)
        assert during.status_code == 200, path
        if path.startswith("/api/"):
            assert json.loads(during.content) == json.loads(before[path].content), path

    cache_redis.start()  # back (empty): answers are stored again
    assert client.get(CHAMPIONS).content == before[CHAMPIONS].content
    import redis

    assert redis.Redis.from_url(cache_redis.url).keys("*answer:*")


# --- PostgreSQL unreachable -------------------------------------------------------------------


@pytest.fixture(scope="module")
def board_without_database(tmp_path_factory):
    """Gunicorn in the production worker class, its DATABASE_URL a closed port: PostgreSQL down."""
    port, closed = free_port(), free_port()
    data_dir = tmp_path_factory.mktemp("nodb")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AEON_", "DJANGO_", "CACHE_"))}
    env |= {
        "AEON_ENV": "development",
        "DEBUG": "0",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed}/aeon",
        "AEON_DATA_DIR": str(data_dir),
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
    }
    env.pop("CELERY_BROKER_URL", None)
    log = (data_dir / "gunicorn.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1"]
        + ["--worker-class", "gthread", "--threads", "2", "config.wsgi"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return urllib.request.urlopen(f"{url}/healthz", timeout=2).status == 200
        except OSError:
            assert server.poll() is None, (data_dir / "gunicorn.log").read_text()
            return False

    try:
        wait_for(up, "gunicorn answers /healthz", 120)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()


def fetch(url: str) -> tuple[int, dict, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/benchmarks",
        CHAMPIONS,
        "/api/v1/champions",
        "/api/v1/runs/AAAAAAAAAAAAAAAA",
        "/api/v1/benchmarks.json",
        "/api/v1/benchmarks.csv",
    ],
)
def test_with_postgresql_down_the_api_answers_503_json_with_retry_after(
    board_without_database, path
):
    status, headers, body = fetch(board_without_database + path)
    assert status == 503, body[:500]
    assert headers["Retry-After"] == "5"
    assert json.loads(body)["reason"] == "UNAVAILABLE"


@pytest.mark.parametrize("path", ["/", "/hardware/", "/models/", "/methodology/"])
def test_with_postgresql_down_pages_answer_a_503_page(board_without_database, path):
    status, headers, body = fetch(board_without_database + path)
    assert status == 503, body[:500]
    assert headers["Retry-After"] == "5"
    assert headers["Content-Type"].startswith("text/html")
    assert b"Briefly unavailable" in body


def test_with_postgresql_down_liveness_still_answers_and_readiness_says_why(
    board_without_database,
):
    assert fetch(board_without_database + "/healthz")[0] == 200
    status, _, body = fetch(board_without_database + "/readyz")
    assert status == 503 and json.loads(body)["checks"]["database"].startswith("error")
