"""The answer cache (docs/champions.md §The generation and the answer cache, docs/operations.md
§The answer cache): one Django cache on Redis shared by every process; a cached answer costs no
query, a bump made by another process reaches every process's next answer at once, ETags and
304 come from Django's conditional GET, and junk query strings cannot grow its key count."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from demo.loader import prefill_hub_cache
from tests.championjobs import GEMMA_816, RTX_5090, submit
from tests.conftest import missing_service
from tests.test_celery_worker import REDIS_URL, redis_answers

ROOT = Path(__file__).resolve().parent.parent
CHAMPIONS = "/api/recipes/champions"


# --- serving ------------------------------------------------------------------------------------


@pytest.fixture
def redis_board(postgres, settings):
    """The answer cache on Redis as production configures it (the key prefix names the
    database), so another process started with the same DATABASE_URL and CACHE_URL shares it."""
    if not redis_answers(REDIS_URL):
        missing_service(f"needs Redis at {REDIS_URL}")
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    db = connection.settings_dict
    settings.CACHE_URL = REDIS_URL
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "aeon:" + db["NAME"],
        }
    }
    prefill_hub_cache()
    yield (
        f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}"
    )
    redis.Redis.from_url(REDIS_URL).flushdb()


def in_another_process(database_url: str, code: str) -> None:
    env = os.environ | {
        "AEON_ENV": "development",
        "DATABASE_URL": database_url,
        "CACHE_URL": REDIS_URL,
        "LOG_LEVEL": "WARNING",
    }
    env.pop("CELERY_BROKER_URL", None)  # the recompute runs inline, in that process
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, check=True
    )


def answer_keys() -> list[bytes]:
    import redis

    return redis.Redis.from_url(REDIS_URL).keys("*answer:*")


def test_a_cached_answer_costs_no_query_and_a_bump_elsewhere_reaches_it(redis_board, client, pod):
    benchmark_id = submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    first = client.get(CHAMPIONS)
    assert len(json.loads(first.content)["champions"]) == 1
    assert answer_keys()  # stored in Redis, where every process finds it

    with CaptureQueriesContext(connection) as queries:
        again = client.get(CHAMPIONS)
    assert (again.status_code, again.content, len(queries)) == (200, first.content, 0)
    assert again["ETag"] == first["ETag"]

    # Another process flags the champion: its commit and recompute bump the shared generation.
    in_another_process(
        redis_board,
        "from board.services import flag_benchmark; "
        f"flag_benchmark(public_id={benchmark_id!r}, flagged=True)",
    )

    later = client.get(CHAMPIONS)
    assert json.loads(later.content)["champions"] == []
    assert later["ETag"] != first["ETag"]
    submit(pod, RTX_5090, "2026-10-05T09:00:00Z")
    assert len(json.loads(client.get(CHAMPIONS).content)["champions"]) == 1


def test_a_matching_if_none_match_is_answered_304_from_the_held_answer(redis_board, client, pod):
    submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    for path in (CHAMPIONS, "/"):
        first = client.get(path)
        with CaptureQueriesContext(connection) as queries:
            unchanged = client.get(path, headers={"If-None-Match": first["ETag"]})
        assert (unchanged.status_code, unchanged.content, len(queries)) == (304, b"", 0), path
        assert unchanged["ETag"] == first["ETag"], path
        assert "public" in unchanged["Cache-Control"], path
        other = client.get(path, headers={"If-None-Match": '"something-else"'})
        assert (other.status_code, other.content) == (200, first.content), path


def test_a_thousand_junk_queries_add_a_bounded_number_of_keys(redis_board, client, pod, settings):
    """Issue 20 point 5: the key uses only the parameters a view reads, and every answer lives
    in one of AEON_ANSWER_CACHE_SLOTS keys, whatever the query string or path carries."""
    settings.AEON_ANSWER_CACHE_SLOTS = 64
    submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    first = client.get(CHAMPIONS)
    stored = len(answer_keys())
    assert stored == 1

    for number in range(1000):  # a parameter the view does not read: the stored answer
        junk = client.get(f"{CHAMPIONS}?q=junk-{number}&utm_source={number}")
        assert (junk.status_code, junk.content) == (200, first.content)
    assert len(answer_keys()) == stored

    for number in range(1000):  # free text in a parameter it reads, and in a path
        assert client.get(f"{CHAMPIONS}?hardware=junk-{number}").status_code == 200
        assert client.get(f"/lab/flags/--junk-{number}/").status_code == 200
    assert stored < len(answer_keys()) <= 64

    settings.AEON_ANSWER_CACHE_SLOTS = 8192
    assert client.get(CHAMPIONS).content == first.content  # still right with other slots
