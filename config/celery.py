"""The Celery app: Redis in production and CI, eager in the embedded default."""

import os

from celery import Celery, shared_task
from django.db import OperationalError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("aeon")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def durable_task(function):
    """A task that rewrites derived rows: acknowledged only once done (a worker that dies leaves
    it to another), retried with backoff for as long as the database is unreachable."""
    return shared_task(
        acks_late=True,
        autoretry_for=(OperationalError,),
        retry_backoff=True,
        retry_backoff_max=300,
        max_retries=None,
    )(function)
