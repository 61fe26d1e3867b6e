"""Cached read answers (docs/champions.md): an API answer is stored once per path with the board
generation it was computed at, and served until the generation moves on.

The generation is a database row every process can read. When the cache is shared (Redis,
`CACHE_URL`), the cache carries its own copy, advanced atomically on every bump, so a cached
answer costs one round trip to Redis (the generation and the answer fetched together) and no
query; an in-process cache reads the row instead, which keeps several processes correct even
without Redis. Every change to what the board shows bumps it after its commit
(`board.services.bump_generation`). Answers carry an ETag (a hash of the body, so a rebuild that
gives back the same bytes gives back the same ETag) and Cache-Control.
"""

import hashlib
import time
from functools import wraps

from django.conf import settings
from django.core.cache import cache
from django.db import connections, router
from django.http import HttpResponse
from django.utils.cache import patch_cache_control

from board.models import BoardGeneration

GENERATION_KEY = "board-generation"
GENERATION_SQL = f"SELECT number FROM {BoardGeneration._meta.db_table} WHERE id = 1"


def fresh_generation() -> int:
    """A starting number never used before (microseconds since the epoch): a database or cache
    flushed or re-created never meets answers cached under its predecessor's numbers."""
    return time.time_ns() // 1000


def shared_cache() -> bool:
    return bool(settings.CACHE_URL)


def stored_generation() -> int | None:
    """The database's generation number; None before the reference data is seeded. It skips the
    ORM: the in-process cache pays this query on every answer."""
    with connections[router.db_for_read(BoardGeneration)].cursor() as cursor:
        cursor.execute(GENERATION_SQL)
        row = cursor.fetchone()
    return row[0] if row else None


def advance_shared_generation() -> None:
    """Move the shared cache's generation on (atomic INCR); a lost one restarts fresh."""
    if not shared_cache():
        return
    try:
        cache.incr(GENERATION_KEY)
    except ValueError:
        cache.add(GENERATION_KEY, fresh_generation(), timeout=None)


def _shared_generation(found) -> int:
    if found is None:
        cache.add(GENERATION_KEY, fresh_generation(), timeout=None)
        found = cache.get(GENERATION_KEY)
    return found


def current_generation() -> int | None:
    if shared_cache():
        return _shared_generation(cache.get(GENERATION_KEY))
    return stored_generation()


def cached_answer(view):
    """Wrap a view (function or `as_view()`): its 200 GET answers are kept per full path with
    the generation they were computed at, with an ETag and public Cache-Control."""

    @wraps(view)
    def answer(request, *args, **kwargs):
        if request.method not in ("GET", "HEAD"):
            return view(request, *args, **kwargs)
        key = "answer:" + hashlib.sha256(request.get_full_path().encode()).hexdigest()
        if shared_cache():
            found = cache.get_many([GENERATION_KEY, key])
            generation = _shared_generation(found.get(GENERATION_KEY))
            stored = found.get(key)
        else:
            generation = stored_generation()
            stored = cache.get(key) if generation is not None else None
        if stored is not None and stored[0] == generation:
            _, content_type, body, etag = stored
            response = HttpResponse(body, content_type=content_type)
            response["ETag"] = etag
            return _public(response)
        response = view(request, *args, **kwargs)
        if hasattr(response, "render") and not response.is_rendered:
            response.render()
        if response.status_code != 200 or response.streaming:
            return response
        etag = f'"{hashlib.sha256(response.content).hexdigest()[:32]}"'
        response["ETag"] = etag
        if generation is not None:
            stored = (generation, response["Content-Type"], response.content, etag)
            cache.set(key, stored, settings.AEON_ANSWER_CACHE_SECONDS)
        return _public(response)

    return answer


def _public(response: HttpResponse) -> HttpResponse:
    patch_cache_control(response, public=True, max_age=settings.AEON_API_MAX_AGE)
    return response
