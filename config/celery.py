"""The Celery app: Redis in production and CI, eager in the embedded default."""

import logging
import os
from functools import wraps

from celery import Celery, shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.db import OperationalError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("aeon")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger("aeon.tasks")


def durable_task(function=None, **options):
    """A task that rewrites derived rows: acknowledged only once done (a worker that dies leaves
    it to another), retried with backoff for as long as the database is unreachable.

    Run inline (eager: the embedded default), it runs inside the request that committed: a
    database it cannot reach there (SQLite's write lock held past its busy timeout) is logged and
    left to the next commit, which rewrites the same rows, instead of retrying at once in a loop
    that held the request, and the pod's answer, for as long as the lock.

    `options` go to the task (e.g. `base=`); `@durable_task(**options)` takes them."""
    if function is None:
        return lambda function: durable_task(function, **options)

    @shared_task(
        bind=True,
        acks_late=True,
        max_retries=None,
        name=f"{function.__module__}.{function.__name__}",
        **options,
    )
    @wraps(function)
    def task(self, *args, **kwargs):
        try:
            return function(*args, **kwargs)
        except OperationalError as exc:
            if self.request.is_eager:
                logger.warning("%s left to the next commit: %s", self.name, exc)
                return None
            countdown = get_exponential_backoff_interval(
                factor=1, retries=self.request.retries, maximum=300, full_jitter=True
            )
            raise self.retry(exc=exc, countdown=countdown) from exc

    return task
