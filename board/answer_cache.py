"""Cached read answers (docs/champions.md §The generation and the answer cache, §Cached pages):
an API answer or a public page is stored with the board generation it was computed at, and
served until the generation moves on.

One cache, Django's (`CACHES["default"]`): Redis when `CACHE_URL` is set (every process shares
it), else each process's own memory. The generation is a database row every process can read;
a shared cache carries its own copy, advanced atomically on every bump, so a cached answer on
Redis costs one round trip (the generation and the answer in one MGET) and no query. Without
Redis the generation is read from its row (one small query), which keeps several processes
correct. Every change to what the board shows bumps it after its commit
(`board.services.bump_generation`).

Keys are bounded whatever the requests carry (docs/operations.md §The answer cache): an answer
is keyed by scheme, host, path and the parameters its view reads (blank ones dropped, sorted,
each value at most `MAX_VALUE_CHARS`), and stored in one of `AEON_ANSWER_CACHE_SLOTS` keys:
the first of its two candidate slots (by a hash of the identity) that is free, stale or its
own, else the second. The slot holds the identity, so an answer is only ever served for its
own request, and a collision costs a render, never a wrong answer. A request
carrying a parameter its view does not read is served the stored answer of its normalised
form when there is one, and is otherwise rendered and never stored (its links may carry the
stray parameter).

A cache that does not answer (Redis down or unreachable) is a miss: the answer is rendered from
the database and not stored, and a warning is logged.

ETags and `304 Not Modified` are Django's (ConditionalGetMiddleware hashes the body): a rebuild
that gives back the same bytes gives back the same ETag.
"""

import hashlib
import logging
import time
from functools import wraps
from typing import NamedTuple

from django.conf import settings
from django.core.cache import cache
from django.db import connections, router
from django.http import HttpResponse
from django.utils.cache import patch_cache_control, patch_vary_headers
from redis.exceptions import RedisError

from board.models import BoardGeneration

logger = logging.getLogger("aeon.cache")
# What a cache that does not answer raises (Django's Redis backend lets redis-py's errors out).
CACHE_ERRORS = (RedisError, OSError)

GENERATION_KEY = "board-generation"
GENERATION_SQL = f"SELECT number FROM {BoardGeneration._meta.db_table} WHERE id = 1"
MAX_VALUE_CHARS = 300  # a longer parameter value: rendered, never stored


def fresh_generation() -> int:
    """A starting number never used before (microseconds since the epoch): a database or cache
    flushed or re-created never meets answers cached under its predecessor's numbers."""
    return time.time_ns() // 1000


def shared_cache() -> bool:
    return bool(settings.CACHE_URL)


def stored_generation() -> int | None:
    """The database's generation number; None before the reference data is seeded. It skips the
    ORM: without Redis every cached answer pays this query."""
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


def cache_get(key: str):
    """`cache.get`, a cache that does not answer read as a miss (board/charts.py too)."""
    try:
        return cache.get(key)
    except CACHE_ERRORS as exc:
        _unavailable(exc)
        return None


def cache_set(key: str, value, timeout: int) -> None:
    """`cache.set`, dropped when the cache does not answer."""
    try:
        cache.set(key, value, timeout)
    except CACHE_ERRORS as exc:
        _unavailable(exc)


def _unavailable(exc: Exception) -> None:
    logger.warning("cache unavailable, serving from the database: %s", exc)


def current_generation() -> int | None:
    if shared_cache():
        return _shared_generation(cache.get(GENERATION_KEY))
    return stored_generation()


# --- keys ---------------------------------------------------------------------------------------


class Identity(NamedTuple):
    """What a request's answer depends on; whether a held answer may be served for it, and
    whether its own answer may be stored."""

    text: str
    servable: bool
    storable: bool

    @property
    def keys(self) -> tuple[str, str]:
        """Its two candidate slots (two-choice hashing: two identities rarely share both)."""
        digest = hashlib.sha256(self.text.encode()).digest()
        slots = settings.AEON_ANSWER_CACHE_SLOTS
        return tuple(f"answer:{int.from_bytes(digest[i : i + 8]) % slots}" for i in (0, 8))


def identity(request, params: frozenset[str]) -> Identity:
    """Scheme, host, path and the query string normalised to the parameters the view reads
    (sorted, blank ones dropped: every view reads a blank parameter as an absent one). Not
    storable when the query holds a parameter the view does not read (the answer of the query
    without it is served, when held); neither served nor stored with an overlong value."""
    storable = servable = True
    pairs = []
    for name, values in request.GET.lists():
        if name not in params:
            storable = False
            continue
        for value in values:
            value = value.strip()
            if len(value) > MAX_VALUE_CHARS:
                storable = servable = False
            if value:
                pairs.append((name, value))
    pairs.sort(key=lambda pair: pair[0])  # stable: a repeated parameter keeps its order
    query = "&".join(f"{name}={value}" for name, value in pairs)
    text = f"{request.scheme}://{request.get_host()}{request.path}?{query}"
    return Identity(text, servable, storable)


# --- the cache ----------------------------------------------------------------------------------


class Answer(NamedTuple):
    """A stored answer; as a plain tuple it is also what the cache holds (pickled)."""

    generation: int
    identity: str
    content_type: str
    body: bytes


def _keeps() -> bool:
    """Whether answers are kept at all (`AEON_ANSWER_CACHE_SECONDS=0`: every request a miss)."""
    return settings.AEON_ANSWER_CACHE_SECONDS > 0


class Found(NamedTuple):
    generation: int | None
    held: Answer | None  # the answer for this identity at this generation
    slot: str  # where a fresh answer for it goes


def _lookup(who: Identity) -> Found:
    """The current generation, the answer held for `who` at it, and the slot its answer goes
    to; on Redis in one round trip."""
    first, second = who.keys
    try:
        if not who.servable or not _keeps():
            return Found(current_generation(), None, first)
        if shared_cache():
            found = cache.get_many([GENERATION_KEY, first, second])
            generation = _shared_generation(found.get(GENERATION_KEY))
        else:
            generation = stored_generation()
            found = cache.get_many([first, second])
    except CACHE_ERRORS as exc:
        _unavailable(exc)
        return Found(None, None, first)  # no generation: rendered, never stored
    held = {key: Answer(*found[key]) for key in (first, second) if found.get(key) is not None}
    for answer in held.values():
        if answer.identity == who.text and answer.generation == generation:
            return Found(generation, answer, first)
    taken = {key for key, answer in held.items() if answer.generation == generation}
    return Found(generation, None, second if first in taken else first)


def _keep(who: Identity, found: Found, response: HttpResponse) -> None:
    if found.generation is None or not who.storable or not _keeps():
        return
    answer = Answer(found.generation, who.text, response["Content-Type"], response.content)
    cache_set(found.slot, tuple(answer), settings.AEON_ANSWER_CACHE_SECONDS)


def _replay(answer: Answer, *, page: bool = False) -> HttpResponse:
    """The held answer with the headers a fresh one gets (ConditionalGetMiddleware then adds
    its ETag, or answers 304)."""
    response = HttpResponse(answer.body, content_type=answer.content_type)
    return _public_page(response) if page else _public(response)


def _rendered(response):
    if hasattr(response, "render") and not response.is_rendered:
        response.render()
    return response


def cached_answer(view=None, *, params=()):
    """Wrap an API view (function or `as_view()`; `params`: the query parameters it reads): its
    200 GET answers are kept with the generation they were computed at, with public
    Cache-Control."""
    allowed = frozenset(params)

    def decorate(view):
        @wraps(view)
        def answer(request, *args, **kwargs):
            if request.method not in ("GET", "HEAD"):
                return view(request, *args, **kwargs)
            who = identity(request, allowed)
            found = _lookup(who)
            if found.held is not None:
                return _replay(found.held)
            response = _rendered(view(request, *args, **kwargs))
            if response.status_code != 200 or response.streaming:
                return response
            _keep(who, found, response)
            return _public(response)

        return answer

    return decorate(view) if view is not None else decorate


# --- pages ----------------------------------------------------------------------------------


def _personal(request) -> bool:
    """A signed-in visitor (staff see moderation extras): their pages are never shared. Signing
    in is kept in the session: without a session cookie nobody is signed in, and the session is
    not even looked at."""
    if settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return False
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
    """Wrap a public page (docs/champions.md §Cached pages): its HTML is kept under its
    identity (`params`: the parameters the page reads) with the generation it was computed at,
    and served with public Cache-Control until the generation moves on. Signed-in visitors
    always get a fresh render, marked private."""
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
            who = identity(request, allowed)
            found = _lookup(who)
            if found.held is not None:
                return _replay(found.held, page=True)
            response = _rendered(view(request, *args, **kwargs))
            if not _shareable(request, response):
                if response.status_code == 200:
                    patch_cache_control(response, private=True, no_cache=True)
                return response
            _keep(who, found, response)
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
