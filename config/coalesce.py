"""One queued task at a time per key (docs/operations.md §Background work): a marker with a
lifetime in the broker's own Redis, set when a task is published and cleared when it starts.

A second publish while the marker stands is dropped: the task already queued has not started
yet, so when it runs it sees everything committed before it (and anything committed after it
starts finds the marker cleared and queues the next one). The marker lives in the broker's
Redis because that is the store every process publishing and consuming tasks shares, and it
never evicts. When the marker cannot be set or read (Redis unreachable, eager tasks, another
broker), every publish goes ahead: coalescing saves work, it never loses any.
"""

import logging
from functools import cache

from django.conf import settings

logger = logging.getLogger("aeon.tasks")


@cache
def _client(url: str):
    import redis

    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)


def _marker_store():
    url = settings.CELERY_BROKER_URL
    if settings.CELERY_TASK_ALWAYS_EAGER or not url.startswith(("redis://", "rediss://")):
        return None
    return _client(url)


def _name(key: str) -> str:
    # Two boards sharing one Redis never share markers: the name includes the database's.
    database = str(settings.DATABASES["default"]["NAME"]).rsplit("/", 1)[-1]
    return f"aeon:{database}:queued:{key}"


def claim(key: str, seconds: int) -> bool:
    """True when the caller should publish: no marker stood, and one now stands for `seconds`
    (or markers are not available)."""
    store = _marker_store()
    if store is None:
        return True
    try:
        return bool(store.set(_name(key), "1", nx=True, ex=seconds))
    except Exception as exc:  # redis.RedisError, and anything the client raises on the way
        logger.warning("coalescing marker %s not set, publishing anyway: %s", key, exc)
        return True


def release(key: str) -> None:
    """The task for `key` starts (or its publish failed): the next publish queues again."""
    store = _marker_store()
    if store is None:
        return
    try:
        store.delete(_name(key))
    except Exception as exc:
        # It expires on its own; meanwhile a publish for this key is dropped as queued.
        logger.warning("coalescing marker %s not cleared: %s", key, exc)
