"""Cached read answers (docs/champions.md): an API answer is stored once per board generation and
path, and served from the cache until the generation moves on.

The generation number lives in the database (one row), so every process agrees on it whatever
the cache backend; every change to what the board shows bumps it after its commit
(`board.services.bump_generation`). Answers carry an ETag (a hash of the body, so a rebuild that
gives back the same bytes gives back the same ETag) and Cache-Control.
"""

import hashlib
from functools import wraps

from django.conf import settings
from django.core.cache import cache
from django.db import connections, router
from django.http import HttpResponse
from django.utils.cache import patch_cache_control

from board.models import BoardGeneration

GENERATION_SQL = f"SELECT number FROM {BoardGeneration._meta.db_table} WHERE id = 1"


def current_generation() -> int | None:
    """The board's generation number; None before the reference data is seeded. Every cached
    answer pays this query, so it skips the ORM (a third of the time)."""
    with connections[router.db_for_read(BoardGeneration)].cursor() as cursor:
        cursor.execute(GENERATION_SQL)
        row = cursor.fetchone()
    return row[0] if row else None


def cached_answer(view):
    """Wrap a view (function or `as_view()`): its 200 GET answers are kept per generation and
    full path, with an ETag and public Cache-Control."""

    @wraps(view)
    def answer(request, *args, **kwargs):
        if request.method not in ("GET", "HEAD"):
            return view(request, *args, **kwargs)
        generation = current_generation()
        key = None
        if generation is not None:
            address = f"{generation}|{request.get_full_path()}".encode()
            key = "answer:" + hashlib.sha256(address).hexdigest()
            stored = cache.get(key)
            if stored is not None:
                content_type, body, etag = stored
                response = HttpResponse(body, content_type=content_type)
                response["ETag"] = etag
                return _public(response)
        response = view(request, *args, **kwargs)
        if hasattr(response, "render") and not response.is_rendered:
            response.render()
        if response.status_code == 200 and not response.streaming:
            etag = f'"{hashlib.sha256(response.content).hexdigest()[:32]}"'
            response["ETag"] = etag
            if key is not None:
                stored = (response["Content-Type"], response.content, etag)
                cache.set(key, stored, settings.AEON_ANSWER_CACHE_SECONDS)
            return _public(response)
        return response

    return answer


def _public(response: HttpResponse) -> HttpResponse:
    patch_cache_control(response, public=True, max_age=settings.AEON_API_MAX_AGE)
    return response
