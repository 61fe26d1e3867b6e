"""Cached read answers (docs/champions.md §The generation and the answer cache, §Cached pages):
an API answer or a public page is stored once per path with the board generation it was
computed at, and served until the generation moves on.

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
from django.utils.cache import patch_cache_control, patch_vary_headers

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


def _lookup(key: str):
    """The current generation and what is stored under `key` (None when nothing is)."""
    if shared_cache():
        found = cache.get_many([GENERATION_KEY, key])
        return _shared_generation(found.get(GENERATION_KEY)), found.get(key)
    generation = stored_generation()
    return generation, cache.get(key) if generation is not None else None


def _replay(stored) -> HttpResponse:
    _, content_type, body, etag = stored
    response = HttpResponse(body, content_type=content_type)
    response["ETag"] = etag
    return response


def _rendered(response):
    if hasattr(response, "render") and not response.is_rendered:
        response.render()
    return response


def _keep(key: str, generation: int | None, response: HttpResponse) -> None:
    """Give a fresh 200 answer its ETag and store it under the generation it was computed at."""
    etag = f'"{hashlib.sha256(response.content).hexdigest()[:32]}"'
    response["ETag"] = etag
    if generation is not None:
        stored = (generation, response["Content-Type"], response.content, etag)
        cache.set(key, stored, settings.AEON_ANSWER_CACHE_SECONDS)


def cached_answer(view):
    """Wrap a view (function or `as_view()`): its 200 GET answers are kept per full path with
    the generation they were computed at, with an ETag and public Cache-Control."""

    @wraps(view)
    def answer(request, *args, **kwargs):
        if request.method not in ("GET", "HEAD"):
            return view(request, *args, **kwargs)
        key = "answer:" + hashlib.sha256(request.get_full_path().encode()).hexdigest()
        generation, stored = _lookup(key)
        if stored is not None and stored[0] == generation:
            return _public(_replay(stored))
        response = _rendered(view(request, *args, **kwargs))
        if response.status_code != 200 or response.streaming:
            return response
        _keep(key, generation, response)
        return _public(response)

    return answer


# --- pages ----------------------------------------------------------------------------------


def page_key(request, params: frozenset[str]) -> str | None:
    """The cache key of a page request: scheme, host, path and the query string normalised
    (parameters sorted, blank ones dropped: every page reads a blank parameter as an absent
    one). None when the query holds a parameter the page does not read: such a request is
    rendered, never stored, so made-up parameters cannot fill the cache."""
    pairs = []
    for name, values in request.GET.lists():
        if name not in params:
            return None
        pairs += [(name, value) for value in values if value != ""]
    pairs.sort(key=lambda pair: pair[0])  # stable: a repeated parameter keeps its order
    query = "&".join(f"{name}={value}" for name, value in pairs)
    identity = f"{request.scheme}://{request.get_host()}{request.path}?{query}"
    return "page:" + hashlib.sha256(identity.encode()).hexdigest()


def _personal(request) -> bool:
    """A signed-in visitor (staff see moderation extras): their pages are never shared. Without
    a session cookie this costs nothing; `request.user` is lazy."""
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated)


def _shareable(request, response) -> bool:
    """Nothing personal in the answer: no cookie set, no CSRF token handed out, no session
    written. Such an answer is served as rendered and never stored."""
    if response.status_code != 200 or response.streaming or response.cookies:
        return False
    if request.META.get("CSRF_COOKIE_NEEDS_UPDATE"):
        return False
    session = getattr(request, "session", None)
    return not (session is not None and session.modified)


def cached_page(view=None, *, params=()):
    """Wrap a public page (docs/champions.md §Cached pages): its HTML is kept per scheme, host,
    path and normalised query string (`params`: the parameters the page reads) with the
    generation it was computed at, and served with an ETag and public Cache-Control until the
    generation moves on. Signed-in visitors always get a fresh render, marked private."""
    allowed = frozenset(params)

    def decorate(view):
        @wraps(view)
        def page(request, *args, **kwargs):
            if request.method not in ("GET", "HEAD"):
                return view(request, *args, **kwargs)
            if _personal(request):
                response = _rendered(view(request, *args, **kwargs))
                patch_cache_control(response, private=True, no_cache=True)
                return response
            key = page_key(request, allowed)
            generation, stored = _lookup(key) if key else (None, None)
            if stored is not None and stored[0] == generation:
                return _public_page(_replay(stored))
            response = _rendered(view(request, *args, **kwargs))
            if not _shareable(request, response):
                if response.status_code == 200:
                    patch_cache_control(response, private=True, no_cache=True)
                return response
            if key:
                _keep(key, generation, response)
            return _public_page(response)

        page.page_cache_params = allowed  # what the URLconf's test reads
        return page

    return decorate(view) if view is not None else decorate


def cache_pages(patterns: list, params: dict[str, tuple[str, ...]]) -> list:
    """Put the named page routes of a URLconf behind `cached_page`, each with the query
    parameters it reads; names not routed (yet) are skipped."""
    for pattern in patterns:
        name = getattr(pattern, "name", None)
        if name in params:
            pattern.callback = cached_page(pattern.callback, params=params[name])
    return patterns


def _public_page(response: HttpResponse) -> HttpResponse:
    patch_vary_headers(response, ("Cookie",))  # a signed-in visitor gets another page
    return _public(response)


def _public(response: HttpResponse) -> HttpResponse:
    patch_cache_control(response, public=True, max_age=settings.AEON_API_MAX_AGE)
    return response
