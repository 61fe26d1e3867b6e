"""Cached read answers (docs/champions.md §The generation and the answer cache, §Cached pages):
an API answer or a public page is stored once per path with the board generation it was
computed at, and served until the generation moves on.

The generation is a database row every process can read. When the cache is shared (Redis,
`CACHE_URL`), the cache carries its own copy, advanced atomically on every bump. Each process
keeps the answers it served in its own memory (bounded, least recently used first out), so a
cached answer costs one small Redis round trip (the generation number) and no query; the body
crosses from Redis only when this process has not held it yet at that generation. Without a
shared cache the process memory is the cache and the generation is read from its row, which
keeps several processes correct even without Redis. Every change to what the board shows bumps
it after its commit (`board.services.bump_generation`). Answers carry an ETag (a hash of the
body, so a rebuild that gives back the same bytes gives back the same ETag) and Cache-Control;
an `If-None-Match` naming the ETag of a held answer is answered 304 without building the body's
answer.
"""

import hashlib
import threading
import time
from collections import OrderedDict
from functools import wraps
from typing import NamedTuple

from django.conf import settings
from django.core.cache import cache
from django.db import connections, router
from django.http import HttpResponse, HttpResponseNotModified
from django.utils.cache import patch_cache_control, patch_vary_headers

from board.models import BoardGeneration

GENERATION_KEY = "board-generation"
GENERATION_SQL = f"SELECT number FROM {BoardGeneration._meta.db_table} WHERE id = 1"
# What an entry of the process memory costs beyond its body and key (the tuple, the strings).
ENTRY_OVERHEAD = 400


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


def _read_shared_generation():
    """The shared generation as stored (None when missing): on the backend's own connection for
    small integers when it has one (config/redis_cache.py), else a plain `get`."""
    read = getattr(cache, "get_int", None)
    return read(GENERATION_KEY) if read is not None else cache.get(GENERATION_KEY)


def current_generation() -> int | None:
    if shared_cache():
        return _shared_generation(_read_shared_generation())
    return stored_generation()


# --- the process memory ------------------------------------------------------------------------


class Answer(NamedTuple):
    """A stored answer; as a plain tuple it is also what Redis holds (pickled)."""

    generation: int
    content_type: str
    body: bytes
    etag: str


class AnswerMemory:
    """This process's answers, at most `settings.AEON_ANSWER_MEMORY_BYTES` of them (bodies, keys
    and a fixed overhead per entry), the least recently served dropped first. Threads of one
    process share it (gthread workers): every change holds the lock."""

    def __init__(self):
        self._entries: OrderedDict[str, Answer] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @staticmethod
    def cost(key: str, answer: Answer) -> int:
        return len(answer.body) + len(key) + ENTRY_OVERHEAD

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str, generation: int) -> Answer | None:
        """The answer held under `key` if it was computed at `generation`."""
        with self._lock:
            answer = self._entries.get(key)
            if answer is None:
                return None
            if answer.generation != generation:
                del self._entries[key]  # stale for good: generations only move on
                self._bytes -= self.cost(key, answer)
                return None
            self._entries.move_to_end(key)
            return answer

    def put(self, key: str, answer: Answer) -> None:
        limit = settings.AEON_ANSWER_MEMORY_BYTES
        cost = self.cost(key, answer)
        if cost > limit // 4:  # one answer never takes more than a quarter of the memory
            return
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._bytes -= self.cost(key, previous)
            self._entries[key] = answer
            self._bytes += cost
            while self._bytes > limit:
                dropped_key, dropped = self._entries.popitem(last=False)
                self._bytes -= self.cost(dropped_key, dropped)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


memory = AnswerMemory()


def _keeps() -> bool:
    """Whether answers are kept at all (`AEON_ANSWER_CACHE_SECONDS=0`: every request a miss)."""
    return settings.AEON_ANSWER_CACHE_SECONDS > 0


def _shared_key(identity: str) -> str:
    return "answer:" + hashlib.sha256(identity.encode()).hexdigest()


def _memory_key(identity: str) -> str:
    """The process memory's key: the identity within this cache (Redis and its key prefix, or
    the process itself), so answers of another board never meet."""
    return f"{settings.CACHE_URL}|{cache.key_prefix}|{identity}"


def _lookup(identity: str) -> tuple[int | None, Answer | None]:
    """The current generation and the answer held for `identity` at it (None when none is):
    from this process's memory, else (shared cache) from Redis, then kept in memory too."""
    generation = current_generation()
    if generation is None or not _keeps():
        return generation, None
    local = _memory_key(identity)
    held = memory.get(local, generation)
    if held is not None or not shared_cache():
        return generation, held
    stored = cache.get(_shared_key(identity))
    if stored is None or stored[0] != generation:
        return generation, None
    answer = Answer(*stored)
    memory.put(local, answer)
    return generation, answer


def _replay(request, answer: Answer, *, page: bool = False) -> HttpResponse:
    """The held answer, or a bodyless 304 when the client holds it already, with the headers
    `_public` (and `_public_page`) give a fresh answer, set at once."""
    if request.method == "GET" and _matches(request.META.get("HTTP_IF_NONE_MATCH"), answer.etag):
        response = HttpResponseNotModified()
    else:
        response = HttpResponse(answer.body, content_type=answer.content_type)
    response["ETag"] = answer.etag
    response["Cache-Control"] = f"public, max-age={settings.AEON_API_MAX_AGE}"
    if page:
        response["Vary"] = "Cookie"
    return response


def _matches(header: str | None, etag: str) -> bool:
    """RFC 9110's weak comparison of If-None-Match against one strong ETag; anything unusual
    (a list, `*`, a weak tag) is left to ConditionalGetMiddleware."""
    return header is not None and (header == etag or header == "W/" + etag)


def _rendered(response):
    if hasattr(response, "render") and not response.is_rendered:
        response.render()
    return response


def _keep(identity: str, generation: int | None, response: HttpResponse) -> None:
    """Give a fresh 200 answer its ETag and store it under the generation it was computed at."""
    etag = f'"{hashlib.sha256(response.content).hexdigest()[:32]}"'
    response["ETag"] = etag
    if generation is None or not _keeps():
        return
    answer = Answer(generation, response["Content-Type"], response.content, etag)
    memory.put(_memory_key(identity), answer)
    if shared_cache():
        cache.set(_shared_key(identity), tuple(answer), settings.AEON_ANSWER_CACHE_SECONDS)


def cached_answer(view):
    """Wrap a view (function or `as_view()`): its 200 GET answers are kept per full path with
    the generation they were computed at, with an ETag and public Cache-Control."""

    @wraps(view)
    def answer(request, *args, **kwargs):
        if request.method not in ("GET", "HEAD"):
            return view(request, *args, **kwargs)
        # The path as routed and the query string as sent: one entry per distinct request.
        identity = f"answer:{request.path}?{request.META.get('QUERY_STRING', '')}"
        generation, held = _lookup(identity)
        if held is not None:
            return _replay(request, held)
        response = _rendered(view(request, *args, **kwargs))
        if response.status_code != 200 or response.streaming:
            return response
        _keep(identity, generation, response)
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
    return f"page:{request.scheme}://{request.get_host()}{request.path}?{query}"


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
            generation, held = _lookup(key) if key else (None, None)
            if held is not None:
                return _replay(request, held, page=True)
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
