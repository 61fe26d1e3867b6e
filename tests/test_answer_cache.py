"""The answer cache's process memory (docs/champions.md §The generation and the answer cache):
each process holds the answers it served, bounded by bytes, least recently served out first; on
Redis a held answer costs the generation number alone, and a bump made by another process
reaches every process's next answer at once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from board.answer_cache import ENTRY_OVERHEAD, Answer, AnswerMemory, memory
from demo.loader import prefill_hub_cache
from tests.championjobs import GEMMA_816, RTX_5090, submit
from tests.conftest import missing_service
from tests.test_celery_worker import REDIS_URL, redis_answers

ROOT = Path(__file__).resolve().parent.parent
CHAMPIONS = "/api/recipes/champions"


def answer(generation: int, size: int) -> Answer:
    return Answer(generation, "application/json", b"x" * size, f'"{generation}-{size}"')


def cost(key: str, size: int) -> int:
    return size + len(key) + ENTRY_OVERHEAD


# --- the memory on its own ----------------------------------------------------------------------


def test_the_memory_never_holds_more_than_its_bound_and_drops_the_least_recently_served(
    settings,
):
    settings.AEON_ANSWER_MEMORY_BYTES = 10 * cost("k00", 1000)
    held = AnswerMemory()
    for number in range(10):
        held.put(f"k{number:02}", answer(1, 1000))
    assert (len(held), held.bytes) == (10, settings.AEON_ANSWER_MEMORY_BYTES)

    assert held.get("k00", 1) is not None  # served again: now the most recent
    for number in range(10, 40):
        held.put(f"k{number:02}", answer(1, 1000))
        assert held.bytes <= settings.AEON_ANSWER_MEMORY_BYTES

    assert len(held) == 10
    assert held.get("k00", 1) is None  # pushed out in the end, after those served before it
    assert [held.get(f"k{number:02}", 1) is not None for number in (29, 30, 39)] == [
        False,
        True,
        True,
    ]


def test_an_answer_of_another_generation_is_never_given_and_is_let_go(settings):
    settings.AEON_ANSWER_MEMORY_BYTES = 1 << 20
    held = AnswerMemory()
    held.put("k", answer(7, 100))

    assert held.get("k", 8) is None
    assert (len(held), held.bytes) == (0, 0)
    held.put("k", answer(8, 100))
    held.put("k", answer(8, 200))  # the same key again replaces, never counts twice
    assert held.get("k", 8).body == b"x" * 200
    assert held.bytes == cost("k", 200)


def test_an_answer_larger_than_a_quarter_of_the_memory_is_not_held(settings):
    settings.AEON_ANSWER_MEMORY_BYTES = 4000
    held = AnswerMemory()
    held.put("small", answer(1, 100))
    held.put("large", answer(1, 3000))

    assert held.get("large", 1) is None
    assert held.get("small", 1) is not None


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
            "BACKEND": "config.redis_cache.ReusedClientRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "aeon:" + db["NAME"],
        }
    }
    memory.clear()
    prefill_hub_cache()
    yield (
        f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}"
    )
    memory.clear()
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


def test_a_held_answer_needs_no_body_from_redis_and_a_bump_elsewhere_reaches_it(
    redis_board, client, pod
):
    benchmark_id = submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    first = client.get(CHAMPIONS)
    assert len(json.loads(first.content)["champions"]) == 1
    assert answer_keys()  # the shared copy, for processes that do not hold it yet

    import redis

    redis.Redis.from_url(REDIS_URL).delete(*answer_keys())
    with CaptureQueriesContext(connection) as queries:
        again = client.get(CHAMPIONS)
    assert (again.status_code, again.content, len(queries)) == (200, first.content, 0)
    assert not answer_keys()  # served from this process's memory

    # Another process flags the champion: its commit and recompute bump the shared generation.
    in_another_process(
        redis_board,
        "from board.services import flag_benchmark; "
        f"flag_benchmark(public_id={benchmark_id!r}, flagged=True)",
    )

    later = client.get(CHAMPIONS)
    assert json.loads(later.content)["champions"] == []
    assert later["ETag"] != first["ETag"]


def test_a_process_that_never_served_an_answer_takes_it_from_redis_then_holds_it(
    redis_board, client, pod
):
    submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    first = client.get(CHAMPIONS)
    memory.clear()  # as a fresh process: nothing held, the shared copy in Redis

    with CaptureQueriesContext(connection) as queries:
        shared = client.get(CHAMPIONS)
    assert (shared.content, shared["ETag"], len(queries)) == (first.content, first["ETag"], 0)
    assert len(memory) == 1

    submit(pod, RTX_5090, "2026-10-05T09:00:00Z")
    assert len(json.loads(client.get(CHAMPIONS).content)["champions"]) == 2


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


def test_pages_beyond_the_memory_bound_are_still_served_right(redis_board, client, settings):
    hosts = [f"board{number}.example" for number in range(12)]  # one stored page per host
    pages = {host: client.get("/methodology/", headers={"Host": host}).content for host in hosts}
    settings.AEON_ANSWER_MEMORY_BYTES = 4 * (max(map(len, pages.values())) + 1000)
    memory.clear()

    for _ in range(3):
        for host in hosts:
            served = client.get("/methodology/", headers={"Host": host})
            assert served.content == pages[host], host
            assert memory.bytes <= settings.AEON_ANSWER_MEMORY_BYTES
    assert 1 <= len(memory) <= 4


def test_the_generation_is_read_on_a_new_connection_when_redis_dropped_the_old_one(redis_board):
    import redis
    from django.core.cache import cache

    from board.answer_cache import GENERATION_KEY, advance_shared_generation, current_generation

    first = current_generation()
    own = cache._own_connection()  # the connection get_int keeps for this thread
    own.send_command("CLIENT", "ID")
    redis.Redis.from_url(REDIS_URL).client_kill_filter(_id=own.read_response())

    advance_shared_generation()
    assert cache.get_int(GENERATION_KEY) == current_generation() == first + 1
